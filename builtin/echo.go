package builtin

import (
	"context"
	"maps"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// echoBuiltin is core.echo: what the compiler checks a verb against, and the code that runs it.
var echoBuiltin = builtinHandler{
	spec: handler.Spec{Name: "core.echo", Kind: rbtype.KindSync, Summary: "returns its arguments (tests, wiring, constants)",
		CheckParams: checkEcho, DryRun: true},
	impl: func(Deps) handler.Handler { return echoHandler{} },
}

// namespaceEcho names the ids core.echo makes for id_field.
var namespaceEcho = uuid.MustParse("2e5c9a71-0b3d-5c8e-a6f4-91d7b3c0e852")

// echo returns its arguments, with params.result merged in, and, when
// params.id_field names a field, a UUID derived from the idempotency key
// there: the same call always gets the same id.
func echo(_ context.Context, c *handler.Call) (handler.Result, error) {
	out := maps.Clone(c.Args)
	if out == nil {
		out = map[string]any{}
	}
	if extra, ok := c.Params["result"].(map[string]any); ok {
		maps.Copy(out, extra)
	}
	if field, ok := c.Params["id_field"].(string); ok {
		out[field] = uuid.NewSHA1(namespaceEcho, []byte(c.IdempotencyKey)).String()
	}
	return handler.Complete(out), nil
}

// echoHandler is core.echo. Its dry run is its call: it touches nothing,
// so a rehearsal (execution level full) says exactly what it will return.
type echoHandler struct{}

func checkEcho(m map[string]any) error {
	p := newParams(m, "result", "id_field")
	if r, ok := m["result"]; ok {
		if _, isObj := r.(map[string]any); !isObj {
			p.fail("result", "param \"result\" must be a mapping merged into the echoed arguments")
		}
	}
	if f := p.str("id_field", false); f != "" && CheckIdentifier(f) != nil {
		p.fail("id_field", "param \"id_field\" %q must be a plain field name", f)
	}
	return p.err()
}

// Call returns the arguments.
func (echoHandler) Call(ctx context.Context, c *handler.Call) (handler.Result, error) {
	return echo(ctx, c)
}

// DryRun is Call: core.echo has no effect to leave out.
func (echoHandler) DryRun(ctx context.Context, c *handler.Call) (handler.Result, error) {
	return echo(ctx, c)
}

// RunsInline: core.echo returns its arguments, so it runs inside the
// transaction that readies its step (handler.Inliner).
func (echoHandler) RunsInline() bool { return true }
