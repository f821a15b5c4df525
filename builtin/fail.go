package builtin

import (
	"context"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// failBuiltin is core.fail: what the compiler checks a verb against, and the code that runs it.
var failBuiltin = builtinHandler{
	spec: handler.Spec{Name: "core.fail", Kind: rbtype.KindSync, Summary: "fails with the code given in params (tests, drills)",
		CheckParams: checkFail},
	impl: func(Deps) handler.Handler { return handler.HandlerFunc(fail) },
}

// fail fails with the code in params (tests, drills).
func fail(_ context.Context, c *handler.Call) (handler.Result, error) {
	code, _ := c.Params["code"].(string)
	msg, _ := c.Params["message"].(string)
	if msg == "" {
		msg = "core.fail was asked to fail"
	}
	return handler.Result{}, &handler.Error{Code: rbtype.ErrorCode(code), Message: msg}
}

func checkFail(m map[string]any) error {
	p := newParams(m, "code", "message")
	p.str("code", true)
	if _, ok := m["message"]; ok {
		p.str("message", false)
	}
	return p.err()
}
