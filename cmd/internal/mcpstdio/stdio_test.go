package mcpstdio

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a buffer the server may write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A request still running when the input ends is answered before the
// server stops: the SDK's own stdio transport would drop it.
func TestAnswersEveryRequestBeforeTheEnd(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		time.Sleep(300 * time.Millisecond)
		return nil, map[string]string{"done": "yes"}, nil
	})
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
	}, "\n") + "\n"
	var out syncBuffer
	p := newPipe(strings.NewReader(in), &out)
	err := srv.Run(context.Background(), &mcp.IOTransport{Reader: p, Writer: p})
	if err != nil {
		require.ErrorContains(t, err, "EOF")
	}
	for _, id := range []string{`"id":1,`, `"id":2,`, `"id":3,`, `"id":4,`} {
		require.Contains(t, out.String(), id)
	}
	require.Equal(t, 2, strings.Count(out.String(), `"done":"yes"`))
}

func TestCounting(t *testing.T) {
	require.Equal(t, 1, requests([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	require.Equal(t, 0, requests([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	require.Equal(t, 0, requests([]byte(`not json`)))
	require.Equal(t, 2, requests([]byte(`[{"id":1,"method":"a"},{"id":"x","method":"b"},{"method":"c"}]`)))
	require.Equal(t, 1, answers([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")))
	require.Equal(t, 0, answers([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)))
}
