package runtime

import (
	"context"
	"maps"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// namespaceEcho names the ids core.echo makes for id_field.
var namespaceEcho = uuid.MustParse("2e5c9a71-0b3d-5c8e-a6f4-91d7b3c0e852")

// echo returns its arguments, with params.result merged in, and, when
// params.id_field names a field, a UUID derived from the idempotency key
// there: the same call always gets the same id.
func echo(_ context.Context, c *Call) (Result, error) {
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
	return Complete(out), nil
}

// echoHandler is core.echo. Its dry run is its call: it touches nothing,
// so a rehearsal (execution level full) says exactly what it will return.
type echoHandler struct{}

func (echoHandler) Call(ctx context.Context, c *Call) (Result, error)   { return echo(ctx, c) }
func (echoHandler) DryRun(ctx context.Context, c *Call) (Result, error) { return echo(ctx, c) }

// fail fails with the code in params (tests, drills).
func fail(_ context.Context, c *Call) (Result, error) {
	code, _ := c.Params["code"].(string)
	msg, _ := c.Params["message"].(string)
	if msg == "" {
		msg = "core.fail was asked to fail"
	}
	return Result{}, &Error{Code: rbtype.ErrorCode(code), Message: msg}
}

// awaitNotification parks at once: the outside world notifies with the
// step's correlation key, which `rbd status` shows.
func awaitNotification(context.Context, *Call) (Result, error) { return Parked(""), nil }

// sleep parks until a time: params.duration, or the argument duration (ISO
// 8601) or until (RFC 3339).
func sleep(_ context.Context, c *Call) (Result, error) {
	if until, ok := c.Args["until"].(string); ok {
		t, err := time.Parse(time.RFC3339, until)
		if err != nil {
			return Result{}, Errorf(rbtype.CodeInvalidInput, "until %q is not an RFC 3339 time", until)
		}
		return ParkedUntil(t), nil
	}
	text, _ := c.Args["duration"].(string)
	if text == "" {
		text, _ = c.Params["duration"].(string)
	}
	if text == "" {
		return Result{}, Errorf(rbtype.CodeInvalidInput, "timer.sleep needs a duration (param or argument) or an until argument")
	}
	d, err := verbs.ParseDuration(text)
	if err != nil {
		return Result{}, Errorf(rbtype.CodeInvalidInput, "%v", err)
	}
	return ParkedUntil(time.Now().Add(d.D)), nil
}

// RunsInline: core.echo returns its arguments, so it runs inside the
// transaction that readies its step (handler.Inliner).
func (echoHandler) RunsInline() bool { return true }
