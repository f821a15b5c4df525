// Package lsptest is a small LSP client for tests and benchmarks of rbc's
// language server: it sends requests and notifications over any stream,
// a subprocess's pipes or an in-process pipe, and collects what the
// server publishes.
package lsptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// Client is one connection to a language server.
type Client struct {
	conn jsonrpc2.Conn
	mu   sync.Mutex
	// published holds diagnostics not yet taken, per document, oldest
	// first; arrived is signalled on each new one.
	published map[protocol.DocumentURI][]protocol.PublishDiagnosticsParams
	arrived   chan struct{}
	messages  []protocol.ShowMessageParams
}

// New starts a client on rw, a stream of framed LSP messages. It stops
// when ctx is done or the stream closes.
func New(ctx context.Context, rw io.ReadWriteCloser) *Client {
	c := &Client{
		conn:      jsonrpc2.NewConn(jsonrpc2.NewStream(rw)),
		published: map[protocol.DocumentURI][]protocol.PublishDiagnosticsParams{},
		arrived:   make(chan struct{}, 1),
	}
	c.conn.Go(ctx, c.handle)
	return c
}

// handle takes the server's notifications. It must not block: it runs on
// the goroutine that also reads the replies to Call.
func (c *Client) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
	switch req.Method() {
	case protocol.MethodTextDocumentPublishDiagnostics:
		var p protocol.PublishDiagnosticsParams
		if err := json.Unmarshal(req.Params(), &p); err != nil {
			return reply(ctx, nil, err)
		}
		c.mu.Lock()
		c.published[p.URI] = append(c.published[p.URI], p)
		c.mu.Unlock()
		select {
		case c.arrived <- struct{}{}:
		default:
		}
	case protocol.MethodWindowShowMessage:
		var p protocol.ShowMessageParams
		if err := json.Unmarshal(req.Params(), &p); err == nil {
			c.mu.Lock()
			c.messages = append(c.messages, p)
			c.mu.Unlock()
		}
	}
	return reply(ctx, nil, nil)
}

// Call sends a request and decodes its result into result.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	_, err := c.conn.Call(ctx, method, params, result)
	return err
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

// Diagnostics waits for the next diagnostics published for a document
// and returns them.
func (c *Client) Diagnostics(ctx context.Context, u protocol.DocumentURI) (protocol.PublishDiagnosticsParams, error) {
	for {
		c.mu.Lock()
		if queue := c.published[u]; len(queue) > 0 {
			c.published[u] = queue[1:]
			c.mu.Unlock()
			return queue[0], nil
		}
		c.mu.Unlock()
		select {
		case <-c.arrived:
		case <-c.conn.Done():
			return protocol.PublishDiagnosticsParams{}, fmt.Errorf("the server closed the connection waiting for diagnostics of %s", u)
		case <-ctx.Done():
			return protocol.PublishDiagnosticsParams{}, fmt.Errorf("no diagnostics for %s: %w", u, ctx.Err())
		}
	}
}

// Messages returns the window/showMessage notifications received so far.
func (c *Client) Messages() []protocol.ShowMessageParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]protocol.ShowMessageParams(nil), c.messages...)
}

// Close closes the stream.
func (c *Client) Close() error { return c.conn.Close() }
