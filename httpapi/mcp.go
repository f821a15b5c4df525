package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpRoute is the Model Context Protocol's endpoint (the Streamable HTTP
// transport, stateless: every POST stands alone, so any daemon behind a
// balancer answers it).
const mcpRoute = "POST /mcp"

// mcpEnvelope is what /mcp's body may hold beyond --max-body: the JSON-RPC
// around a tool's arguments. A source the size of the limit reaches its
// tool, and its submission meets the limit as it would over the API,
// answering the API's BODY_TOO_LARGE.
const mcpEnvelope = 64 << 10

// bodyLimit is the largest body a route reads.
func (s *Server) bodyLimit(route string) int64 {
	if route == mcpRoute {
		return s.cfg.MaxBody + mcpEnvelope
	}
	return s.cfg.MaxBody
}

// mcpSchemas are the tools' schemas, worked out once for every server
// made for a request.
var mcpSchemas = mcp.NewSchemaCache()

// serveMCP is POST /mcp. The bearer token was checked as for any route;
// each tool then calls the API's own route in process with the same
// token, so it is checked for its role and tenant, answered and counted
// exactly as that route is.
//
// What reaches the SDK is one message at a time (mcp_admission.go): a
// JSON-RPC batch is split and its calls run one after another, and a
// subscriptions/listen is a live stream, counted as one.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) error {
	return s.admitMCP(w, r)
}

// newMCPHandler is /mcp's handler: a server of the tools for each
// request's principal.
func (s *Server) newMCPHandler() *mcp.StreamableHTTPHandler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.mcpServer(principalOf(r), r.Header)
	}, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: s.log, MaxRequestBodyBytes: s.bodyLimit(mcpRoute),
		// The SDK refuses a loopback connection whose Host is not a
		// loopback name, against DNS rebinding of servers without
		// authentication. /mcp has the bearer token every route has, and
		// a TLS proxy on the daemon's host (rbd listens on 127.0.0.1 by
		// default) forwards other names: the check would refuse it.
		DisableLocalhostProtection: true,
	})
}

// MCPServer returns the MCP server of the tools /mcp serves, for the
// caller whose bearer token is given ("" when the daemon has no tokens):
// to serve them over another transport, or to test them. An unknown token
// is ErrUnknownToken.
func (s *Server) MCPServer(token string) (*mcp.Server, error) {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	p, ok := s.tokens.principal(&http.Request{Header: h})
	if !ok {
		return nil, ErrUnknownToken
	}
	return s.mcpServer(p, h), nil
}

// ErrUnknownToken is MCPServer's answer for a token the daemon does not
// accept.
var ErrUnknownToken = errors.New("a valid API token is required")

// mcpServer is the tools for principal p, whose request carried header:
// its Authorization goes with every call a tool makes, and so do its
// trace context and correlation id.
func (s *Server) mcpServer(p *Principal, header http.Header) *mcp.Server {
	pass := http.Header{}
	for _, k := range []string{"Authorization", TraceParentHeader, TraceStateHeader, CorrelationIDHeader} {
		if v := header.Get(k); v != "" {
			pass.Set(k, v)
		}
	}
	return NewMCPServer(s.inProcess(p, pass), MCPOptions{
		Approvals: s.cfg.MCPApprovals, By: p.Actor, Version: s.cfg.Version, SchemaCache: mcpSchemas,
	})
}

type viaMCPKey struct{}

// viaMCP is who a request made in process by an MCP tool acts for, or nil
// for a request from outside: only this package puts it in a context.
func viaMCP(r *http.Request) *Principal {
	p, _ := r.Context().Value(viaMCPKey{}).(*Principal)
	return p
}

// inProcess calls the API's routes in this process, as the principal p
// whose headers are pass: through ServeHTTP, so every check a route makes
// (the token, its role and tenant, the body's size) is made again.
func (s *Server) inProcess(p *Principal, pass http.Header) APICaller {
	return func(ctx context.Context, req *APIRequest) (*APIResponse, error) {
		var body io.Reader = http.NoBody
		if req.Body != nil {
			body = bytes.NewReader(req.Body)
		}
		r, err := http.NewRequestWithContext(context.WithValue(ctx, viaMCPKey{}, p), req.Method, req.Path, body)
		if err != nil {
			return nil, err
		}
		for k, v := range req.Header {
			r.Header[k] = v
		}
		for k, v := range pass {
			r.Header[k] = v
		}
		if req.Body != nil {
			r.Header.Set("Content-Type", "application/json")
		}
		r.Header.Set("Accept", "application/json")
		r.RemoteAddr = "mcp"
		w := &bufferedResponse{header: http.Header{}}
		s.ServeHTTP(w, r)
		return &APIResponse{StatusCode: w.statusCode(), Body: w.body.Bytes()}, nil
	}
}

// fromMCP reports whether a request says it comes from an MCP tool: the
// daemon's own, or rbd mcp's (which marks its requests).
func fromMCP(r *http.Request) bool {
	return viaMCP(r) != nil || strings.EqualFold(r.Header.Get(ViaHeader), "mcp")
}

// bufferedResponse keeps an answer in memory, for inProcess.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

func (b *bufferedResponse) statusCode() int {
	if b.status == 0 {
		return http.StatusOK
	}
	return b.status
}
