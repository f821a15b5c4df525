package builtin

import (
	"context"
	"time"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// sleepBuiltin is timer.sleep: what the compiler checks a verb against, and the code that runs it.
var sleepBuiltin = builtinHandler{
	spec: handler.Spec{Name: "timer.sleep", Kind: rbtype.KindDurable, Summary: "parks until a time or for a duration",
		CheckParams: checkSleep},
	impl: func(Deps) handler.Handler { return handler.HandlerFunc(sleep) },
}

// sleep parks until a time: params.duration, or the argument duration (ISO
// 8601) or until (RFC 3339).
func sleep(_ context.Context, c *handler.Call) (handler.Result, error) {
	if until, ok := c.Args["until"].(string); ok {
		t, err := time.Parse(time.RFC3339, until)
		if err != nil {
			return handler.Result{}, handler.Errorf(rbtype.CodeInvalidInput, "until %q is not an RFC 3339 time", until)
		}
		return handler.ParkedUntil(t), nil
	}
	text, _ := c.Args["duration"].(string)
	if text == "" {
		text, _ = c.Params["duration"].(string)
	}
	if text == "" {
		return handler.Result{}, handler.Errorf(rbtype.CodeInvalidInput, "timer.sleep needs a duration (param or argument) or an until argument")
	}
	d, err := verbs.ParseDuration(text)
	if err != nil {
		return handler.Result{}, handler.Errorf(rbtype.CodeInvalidInput, "%v", err)
	}
	return handler.ParkedUntil(time.Now().Add(d.D)), nil
}

func checkSleep(m map[string]any) error {
	p := newParams(m, "duration")
	if d := p.str("duration", false); d != "" {
		if _, err := verbs.ParseDuration(d); err != nil {
			p.fail("duration", "param \"duration\": %v", err)
		}
	}
	return p.err()
}
