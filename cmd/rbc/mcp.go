package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/cmd/internal/mcpstdio"
	"github.com/runbookdev/runbook/cmd/internal/rbcmcp"
)

// runMCP serves rbc's Model Context Protocol tools on standard input and
// output (docs/reference/mcp.md). Their verbs are a call's own, else
// --verbs, else RBC_VERBS.
func runMCP(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("mcp", stderr)
	var flagged cli.ListFlag
	fs.Var(&flagged, "verbs", "directory or file of verb definitions the tools use when a call names none (repeatable)")
	rest, err := fs.Parse(args)
	if err != nil {
		return parseFailed(err, stderr)
	}
	if len(rest) > 0 {
		_ = fs.UsageErrorf("mcp takes no FILE arguments, got %d", len(rest))
		return exitCantRun
	}
	paths := []string(flagged)
	if len(paths) == 0 {
		paths = envVerbPaths()
	}
	srv := rbcmcp.NewServer(rbcmcp.Options{Verbs: paths, Version: version()})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Run(ctx, mcpstdio.Transport()); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return cantRun(stderr, "mcp: %v", err)
	}
	return exitOK
}
