// Package mcpstdio is the standard input and output transport of rbc mcp
// and rbd mcp: the SDK's, except that the end of the input does not cut
// short the requests read before it. A script can then pipe a file of
// JSON-RPC messages in (`rbc mcp < requests.jsonl`) and read every
// answer, as an editor that keeps the pipe open does.
package mcpstdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Drain bounds the wait, after the input ends, for the answers still
// owed: a tool that does not return must not keep the process alive
// forever once its client has gone.
const Drain = 30 * time.Second

// Transport is standard input and output as an MCP transport.
func Transport() mcp.Transport {
	p := newPipe(os.Stdin, os.Stdout)
	return &mcp.IOTransport{Reader: p, Writer: p}
}

// pipe passes messages through unchanged, counting the requests read and
// the answers written, so that the end of the input can wait for the
// answers owed.
type pipe struct {
	in  *bufio.Reader
	out io.Writer
	buf []byte

	mu       sync.Mutex
	owed     int
	answered chan struct{} // closed and replaced each time owed falls
}

func newPipe(in io.Reader, out io.Writer) *pipe {
	return &pipe{in: bufio.NewReader(in), out: out, answered: make(chan struct{})}
}

// Read hands on the input a line at a time; at its end it first waits
// until every request read has been answered (or Drain has passed).
func (p *pipe) Read(b []byte) (int, error) {
	if len(p.buf) == 0 {
		line, err := p.in.ReadBytes('\n')
		if len(line) == 0 {
			if err == io.EOF {
				p.waitAnswered(time.Now().Add(Drain))
			}
			return 0, err
		}
		p.add(requests(line))
		p.buf = line
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	return n, nil
}

// Write writes a message (or a batch) and counts the answers in it.
func (p *pipe) Write(b []byte) (int, error) {
	n, err := p.out.Write(b)
	p.add(-answers(b))
	return n, err
}

func (p *pipe) Close() error { return nil }

func (p *pipe) add(n int) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.owed += n
	if n < 0 {
		close(p.answered)
		p.answered = make(chan struct{})
	}
}

func (p *pipe) waitAnswered(deadline time.Time) {
	for {
		p.mu.Lock()
		owed, answered := p.owed, p.answered
		p.mu.Unlock()
		if owed <= 0 {
			return
		}
		select {
		case <-answered:
		case <-time.After(time.Until(deadline)):
			return
		}
	}
}

// message is what the counting needs of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// messages reads a message or a batch; nil for anything else, which the
// SDK answers or refuses itself.
func messages(b []byte) []message {
	b = bytes.TrimSpace(b)
	var batch []message
	if len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &batch) != nil {
			return nil
		}
		return batch
	}
	var one message
	if json.Unmarshal(b, &one) != nil {
		return nil
	}
	return []message{one}
}

// requests counts the messages that expect an answer: a method and an id.
func requests(b []byte) int {
	n := 0
	for _, m := range messages(b) {
		if m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" {
			n++
		}
	}
	return n
}

// answers counts the responses: an id and no method.
func answers(b []byte) int {
	n := 0
	for _, m := range messages(b) {
		if m.Method == "" && len(m.ID) > 0 {
			n++
		}
	}
	return n
}
