package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/cmd/internal/mcpstdio"
	"github.com/runbookdev/runbook/httpapi"
)

const mcpUsage = `Usage: rbd mcp [flags]

Serves rbd's Model Context Protocol tools on standard input and output,
for an agent (docs/reference/mcp.md): submit, status, events,
next_actions, retry, regenerate, cancel, extend, close, notify, costs,
whoami and verbs, each a call of the daemon's API with --token, checked as
that call is. approve and reject are offered only when the daemon runs
with --mcp-approvals. notify signs with --webhook-secret-file, as rbd
notify does.
`

func runMCP(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("mcp", mcpUsage, stdout, stderr)
	secretFile := c.fs.String("webhook-secret-file", "", "sign the notify tool's notifications with the first secret in this file, as rbd serve's --webhook-secret-file")
	c.fs.Env("webhook-secret-file", "RBD_WEBHOOK_SECRET_FILE")
	if _, status, ok := c.parse(args, 0, "no arguments"); !ok {
		return status
	}
	var secret []byte
	if *secretFile != "" {
		secrets, err := readLines(*secretFile, "--webhook-secret-file")
		if err != nil {
			return cantRun(stderr, "%v", err)
		}
		secret = []byte(secrets[0])
	}
	ctx, cancel := c.context()
	defer cancel()
	cl := c.client()
	opts := httpapi.MCPOptions{Version: version()}
	// Who the token is, and whether the daemon takes decisions through
	// MCP: asked once, at start.
	askCtx, done := context.WithTimeout(ctx, 10*time.Second)
	me, err := cl.Whoami(askCtx)
	done()
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Code == client.CodeUnauthorized:
		// The daemon refuses the token. Exiting would leave the agent's
		// client only "Connection closed" to show; serving, each tool
		// answers the daemon's UNAUTHORIZED, which names RBD_TOKEN and
		// --token, where the client shows tool errors; the log says it
		// too, once (docs/reference/mcp.md, "A token the daemon refuses").
		fmt.Fprintf(stderr, "rbd mcp: the daemon at %s refuses %s: %s; every tool will answer UNAUTHORIZED until rbd mcp is started with a token it holds\n",
			c.server, tokenSource(c.token), apiErr.Message)
	case errors.As(err, &apiErr):
		return c.failed(err, nil)
	case err != nil:
		fmt.Fprintf(stderr, "rbd mcp: cannot reach the daemon at %s (%v); each tool asks again when called, and approve and reject are not offered\n", c.server, err)
	default:
		// The tools act as the token's actor, as the daemon's own /mcp does.
		opts.Approvals, opts.By = me.MCPApprovals, me.Actor
	}
	srv := httpapi.NewMCPServer(clientCaller(cl, secret), opts)
	if err := srv.Run(ctx, mcpstdio.Transport()); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return cantRun(stderr, "mcp: %v", err)
	}
	return exitOK
}

// tokenSource says where rbd mcp's token came from, for its log: a
// client that starts it passes its environment only as its configuration
// says (docs/reference/mcp.md).
func tokenSource(token string) string {
	if token == "" {
		return "a call without a token (no RBD_TOKEN in rbd mcp's environment, no --token)"
	}
	return "the token in RBD_TOKEN (or --token)"
}

// clientCaller sends the tools' requests to the daemon with the Go
// client (its token, its retries of 503s), signing notifications with
// secret when there is one.
func clientCaller(cl *client.Client, secret []byte) httpapi.APICaller {
	return func(ctx context.Context, req *httpapi.APIRequest) (*httpapi.APIResponse, error) {
		header := req.Header.Clone()
		if req.Path == "/v1/notifications" && len(secret) > 0 {
			header.Set(client.SignatureHeader, client.Sign(secret, req.Body, time.Now()))
		}
		resp, err := cl.Do(ctx, req.Method, req.Path, header, req.Body)
		if err != nil {
			return nil, err
		}
		return &httpapi.APIResponse{StatusCode: resp.StatusCode, Body: resp.Body}, nil
	}
}
