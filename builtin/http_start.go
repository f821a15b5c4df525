package builtin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// httpStartBuiltin is http.start: what the compiler checks a verb against, and the code that runs it.
var httpStartBuiltin = builtinHandler{
	spec: handler.Spec{Name: "http.start", Kind: rbtype.KindDurable, Summary: "POSTs a task with a correlation key and callback, then parks",
		CheckParams: checkStart},
	impl: func(d Deps) handler.Handler { return &httpStart{deps: d} },
}

// httpStart POSTs a task to an external system, with the correlation key
// and the callback address, then parks.
type httpStart struct{ deps Deps }

func (h *httpStart) Call(ctx context.Context, c *handler.Call) (handler.Result, error) {
	body := map[string]any{
		"correlation_key": c.CorrelationKey,
		"callback_url":    c.CallbackURL,
		"args":            c.Args,
	}
	resp, err := send(ctx, h.deps, c, body)
	if err != nil {
		return handler.Result{}, err
	}
	id, _ := resp["id"].(string)
	return handler.Parked(id), nil
}

// Cancel asks the outside world to stop the work a start began: a POST to
// params.cancel_url naming the correlation key (also the request's
// Idempotency-Key, so a repeat is harmless), the invocation and the
// external id.
func (h *httpStart) Cancel(ctx context.Context, c *handler.Call) (bool, error) {
	target, _ := c.Params["cancel_url"].(string)
	if target == "" {
		return false, nil
	}
	cc := *c
	cc.Params = map[string]any{"url": target, "method": http.MethodPost, "headers": c.Params["headers"]}
	cc.IdempotencyKey = c.CorrelationKey
	_, err := send(ctx, h.deps, &cc, map[string]any{
		"correlation_key": c.CorrelationKey, "invocation_id": c.InvocationID.String(), "external_id": c.ExternalID,
	})
	return true, err
}

// checkStart checks http.start's params: http.call's, and an optional
// cancel_url, where a cancelled runbook tells the outside world to stop.
func checkStart(m map[string]any) error {
	rest := make(map[string]any, len(m))
	for k, v := range m {
		if k != "cancel_url" {
			rest[k] = v
		}
	}
	var probs handler.ParamProblems
	if err := checkHTTP(rest); err != nil {
		probs = append(probs, err.(handler.ParamProblems)...)
	}
	if raw, ok := m["cancel_url"]; ok {
		u, isStr := raw.(string)
		parsed, err := url.Parse(u)
		if !isStr || err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			probs = append(probs, handler.ParamProblem{Param: "cancel_url",
				Message: fmt.Sprintf("param \"cancel_url\" %v must be an absolute http or https URL", raw)})
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return probs
}
