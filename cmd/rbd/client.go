package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// clientCommand is what every client command shares: the daemon to call,
// the token, the output format.
type clientCommand struct {
	name   string
	fs     *cli.EnvFlags
	server string
	token  string
	format *cli.ChoiceFlag
	// correlationID is sent as X-Correlation-Id (submit and regenerate's
	// --correlation-id).
	correlationID string
	stdout        io.Writer
	stderr        io.Writer
}

func newClientCommand(name, usage string, stdout, stderr io.Writer) *clientCommand {
	c := &clientCommand{name: name, fs: cli.NewEnvFlags("rbd "+name, usage, stderr), stdout: stdout, stderr: stderr}
	c.fs.StringVar(&c.server, "server", "http://127.0.0.1:8080", "the daemon's URL")
	c.fs.Env("server", "RBD_SERVER")
	c.fs.StringVar(&c.token, "token", "", "API bearer token")
	c.fs.Env("token", "RBD_TOKEN")
	c.format = cli.Choice("table", "table", "json")
	c.fs.Var(c.format, "format", "output: table or json")
	return c
}

// parse reads the flags and checks the number of positional arguments.
// When the command should not go on, status is its exit status (the
// mistake has been reported).
func (c *clientCommand) parse(args []string, want int, what string) (positional []string, status int, ok bool) {
	positional, err := c.fs.Parse(args)
	if err != nil {
		return nil, parseStatus(err, c.stderr), false
	}
	if len(positional) != want {
		got := fmt.Sprintf("%d arguments", len(positional))
		if len(positional) == 1 {
			got = "1 argument"
		}
		_ = c.fs.UsageErrorf("%s takes %s, got %s", c.name, what, got)
		return nil, exitCantRun, false
	}
	return positional, 0, true
}

// parseStatus is the exit status after flags did not parse: 0 for -h,
// whose help was printed as asked, 2 otherwise. A mistake the flag set
// has not reported (a bad value in an environment variable) is reported
// here.
func parseStatus(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if !cli.Reported(err) {
		return cantRun(stderr, "%v", err)
	}
	return exitCantRun
}

func (c *clientCommand) client() *client.Client {
	return &client.Client{BaseURL: c.server, Token: c.token, Header: traceHeader(os.Getenv, c.correlationID)}
}

// traceHeader is the trace context a client command passes on: TRACEPARENT
// and TRACESTATE from its environment (OpenTelemetry's convention for
// carrying a trace into a process, which a CI job or a script that traces
// itself sets), and the correlation id given.
func traceHeader(getenv func(string) string, correlationID string) http.Header {
	h := http.Header{}
	if v := getenv("TRACEPARENT"); v != "" {
		h.Set(httpapi.TraceParentHeader, v)
		if s := getenv("TRACESTATE"); s != "" {
			h.Set(httpapi.TraceStateHeader, s)
		}
	}
	if correlationID != "" {
		h.Set(httpapi.CorrelationIDHeader, correlationID)
	}
	return h
}

// context ends at SIGINT or SIGTERM, so that --wait and --follow stop
// cleanly.
func (c *clientCommand) context() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// json reports whether the output is JSON.
func (c *clientCommand) json() bool { return c.format.Value == "json" }

// failed reports an error from the daemon, or from reaching it, and
// returns the exit status: 1 when the daemon refused, 2 when it could not
// be asked. Diagnostics are shown against the local sources when given.
func (c *clientCommand) failed(err error, sources lang.Sources) int {
	var apiErr *client.Error
	if !errors.As(err, &apiErr) {
		if errors.Is(err, context.Canceled) {
			return exitFailed
		}
		return cantRun(c.stderr, "cannot reach the daemon at %s: %v", c.server, err)
	}
	if len(apiErr.Diagnostics) > 0 {
		if c.json() {
			_ = cli.WriteJSON(c.stdout, apitype.ErrorBody{Error: apiErr.ErrorInfo})
		}
		_ = lang.WriteText(c.stderr, apiErr.Diagnostics, sources)
		return exitFailed
	}
	if apiErr.Field != "" {
		fmt.Fprintf(c.stderr, "rbd: %s (field %s): %s\n", apiErr.Code, apiErr.Field, apiErr.Message)
		return exitFailed
	}
	fmt.Fprintf(c.stderr, "rbd: %s: %s\n", apiErr.Code, apiErr.Message)
	return exitFailed
}

// inputFlags collect a command's inputs: --input k=v (a string),
// --input k:=JSON (any JSON value), and --inputs-file (a JSON object).
type inputFlags struct {
	pairs cli.ListFlag
	file  string
}

func (in *inputFlags) register(fs *cli.EnvFlags) {
	fs.Var(&in.pairs, "input", "an input: k=v gives the string v, k:=JSON gives a JSON value such as 5, true or [1,2] (repeatable)")
	fs.StringVar(&in.file, "inputs-file", "", "a JSON object of inputs; --input values override it")
}

func (in *inputFlags) values() (map[string]any, error) {
	out := map[string]any{}
	if in.file != "" {
		raw, err := os.ReadFile(in.file)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if err := dec.Decode(&out); err != nil {
			return nil, fmt.Errorf("%s must hold a JSON object of inputs: %v", in.file, err)
		}
	}
	for _, p := range in.pairs {
		if k, v, ok := strings.Cut(p, ":="); ok && !strings.Contains(k, "=") {
			dec := json.NewDecoder(strings.NewReader(v))
			dec.UseNumber()
			var val any
			if err := dec.Decode(&val); err != nil {
				return nil, fmt.Errorf("--input %s: %q is not JSON (use %s=%s for a string)", p, v, k, v)
			}
			out[strings.TrimPrefix(k, "$")] = val
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--input %q must be NAME=value or NAME:=JSON", p)
		}
		out[strings.TrimPrefix(k, "$")] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// whoAmI names the person deciding a gate or cancelling, by default.
func whoAmI() string {
	for _, v := range []string{"RBD_USER", "USER", "LOGNAME"} {
		if u := os.Getenv(v); u != "" {
			return u
		}
	}
	return "rbd-cli"
}

// readSource reads a runbook file, for submit and extend.
func readSource(path string) (lang.Sources, []byte, string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, "", err
	}
	name := filepath.Base(path)
	return lang.Sources{name: src}, src, name, nil
}

// runbookText is what a FILE.rbk or PLAN.json gives a request: its source
// or its plan, its name, and the text the daemon's diagnostics point into.
type runbookText struct {
	source   string
	plan     json.RawMessage
	filename string
	sources  lang.Sources
}

// readRunbook reads a runbook's source, or a plan rbc compiled (a .json
// file).
func readRunbook(path string) (runbookText, error) {
	sources, src, name, err := readSource(path)
	if err != nil {
		return runbookText{}, err
	}
	if !strings.HasSuffix(name, ".json") {
		return runbookText{source: string(src), filename: name, sources: sources}, nil
	}
	r := runbookText{plan: json.RawMessage(src), filename: name, sources: sources}
	// The body carries the plan compacted, as encoding/json writes a
	// RawMessage, and the daemon's diagnostics point into that text.
	if sent, err := json.Marshal(r.plan); err == nil {
		r.sources = lang.Sources{name: sent}
	}
	return r, nil
}

// modeOf is the mode --dry-run and --draft-only ask for ("" for execute).
func modeOf(dryRun, draftOnly bool) (rbtype.Mode, error) {
	switch {
	case dryRun && draftOnly:
		return "", errors.New("--dry-run and --draft-only are two modes; give one")
	case dryRun:
		return rbtype.ModeDryRun, nil
	case draftOnly:
		return rbtype.ModeDraftOnly, nil
	}
	return "", nil
}
