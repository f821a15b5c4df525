package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/runbookdev/runbook/apitype"
)

// The bounds on one POST /mcp (docs/reliability.md, "Under attack"; and
// docs/reference/mcp.md). A JSON-RPC batch once ran every call it held at
// once and buffered every answer: a 24 KB batch from a read token made a
// 402 MB answer and held 5 GB.
const (
	// MCPMaxBatch is the most messages a JSON-RPC batch may hold; a
	// larger batch is refused whole, before any of it runs.
	MCPMaxBatch = 16
	// MCPMaxAnswer is the most bytes of answers a batch gathers: once
	// its answers reach it, the calls after are not run, and each is
	// answered with an error saying so (send them again).
	MCPMaxAnswer = 4 << 20
)

// mcpListen is the method of MCP's long-lived subscription stream
// (SEP-2575): the request stays open until the client leaves.
const mcpListen = "subscriptions/listen"

// mcpMessage is what admission reads of a JSON-RPC message: its id (absent
// for a notification) and its method (absent for a response).
type mcpMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
}

// admitMCP hands /mcp's messages to the SDK under the daemon's bounds. A
// single message goes through as it came; a subscriptions/listen takes a
// place among the live streams (--max-streams-per-token, --max-streams)
// and gives its body's room back, since it holds no body while it lasts;
// a batch is split (serveMCPBatch).
func (s *Server) admitMCP(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "error reading the body: %v", err)
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) == nil && len(batch) > 0 {
			return s.serveMCPBatch(w, r, batch)
		}
	}
	var msg mcpMessage
	if json.Unmarshal(trimmed, &msg) == nil && msg.Method == mcpListen {
		release, err := s.streams.take(s, r, principalOf(r))
		if err != nil {
			return err
		}
		defer release()
		leavePool(r)
		// Shutdown waits for handlers, and a listen would never return.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-s.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		r = r.WithContext(ctx)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	s.mcp.ServeHTTP(w, r)
	return nil
}

// serveMCPBatch answers a JSON-RPC batch one message at a time, in order,
// each through the SDK as if it came alone (so each tool call is admitted,
// checked and counted as a request of its own, and never two of one batch
// at once), and gathers the answers into the batch's array. A batch over
// MCPMaxBatch is refused whole; once the answers gathered reach
// MCPMaxAnswer bytes, the calls left are answered with an error and not
// run. A subscriptions/listen in a batch is refused: it would never end.
func (s *Server) serveMCPBatch(w http.ResponseWriter, r *http.Request, batch []json.RawMessage) error {
	if len(batch) > MCPMaxBatch {
		return s.refuse(r, reasonLimitPrefix+"mcp_batch", &apiError{status: http.StatusRequestEntityTooLarge, code: CodeLimitExceeded,
			message: fmt.Sprintf("a JSON-RPC batch holds at most %d messages; send them in smaller batches, or one by one", MCPMaxBatch),
			limit:   &apitype.LimitInfo{Name: "mcp-batch", Max: MCPMaxBatch, Got: len(batch)}})
	}
	var answers [][]byte
	size := 0
	for _, raw := range batch {
		var msg mcpMessage
		_ = json.Unmarshal(raw, &msg)
		switch {
		case r.Context().Err() != nil:
			return nil // the client went away; nothing more runs
		case msg.Method == mcpListen:
			answers = append(answers, rpcError(msg.ID, -32600, mcpListen+" cannot be part of a batch; send it alone"))
			continue
		case size >= MCPMaxAnswer:
			if len(msg.ID) > 0 {
				answers = append(answers, rpcError(msg.ID, -32000, fmt.Sprintf(
					"not run: the batch's answers reached the limit of %d bytes; send this message again", MCPMaxAnswer)))
			}
			continue
		}
		one := r.Clone(r.Context())
		one.Body = io.NopCloser(bytes.NewReader(raw))
		one.ContentLength = int64(len(raw))
		rec := &bufferedResponse{header: http.Header{}}
		s.mcp.ServeHTTP(rec, one)
		answer := bytes.TrimSpace(rec.body.Bytes())
		switch {
		case rec.statusCode() == http.StatusAccepted || len(msg.ID) == 0 && len(answer) == 0:
			// A notification or a response: nothing to answer.
		case rec.statusCode() < 300 && json.Valid(answer):
			answers = append(answers, answer)
			size += len(answer)
		default:
			answers = append(answers, rpcError(msg.ID, -32600, strings.TrimSpace(string(answer))))
		}
	}
	if len(answers) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte{'['})
	for i, a := range answers {
		if i > 0 {
			_, _ = w.Write([]byte{','})
		}
		_, _ = w.Write(a)
	}
	_, _ = w.Write([]byte("]\n"))
	return nil
}

// rpcError is a JSON-RPC error answer to the message whose id is given.
func rpcError(id json.RawMessage, code int, message string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	return b
}
