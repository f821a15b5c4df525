package builtin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// httpCallBuiltin is http.call: what the compiler checks a verb against, and the code that runs it.
var httpCallBuiltin = builtinHandler{
	spec: handler.Spec{Name: "http.call", Kind: rbtype.KindSync, Summary: "one HTTP request, with the Idempotency-Key header",
		CheckParams: checkHTTP, DryRun: true},
	impl: func(d Deps) handler.Handler { return &httpCall{deps: d} },
}

// httpCall is one HTTP request built from params and arguments.
type httpCall struct{ deps Deps }

func (h *httpCall) Call(ctx context.Context, c *handler.Call) (handler.Result, error) {
	resp, header, err := sendFor(ctx, h.deps, c, c.Args)
	if err != nil {
		return handler.Result{}, err
	}
	return handler.Complete(resp).WithUsage(usageOf(header)), nil
}

// UsageHeader is the response header a service behind http.call reports
// what the call used in (docs/design/semantics.md section 3), as JSON:
// {"tokens_in":..,"tokens_out":..,"model":"..","cost_usd":..,"credits":..}.
const UsageHeader = "Rbd-Usage"

// usageOf reads a response's usage header. One that is missing, too long
// or not that JSON reports nothing: what a call used is accounting, and a
// provider's malformed header must not fail a call that succeeded.
func usageOf(h http.Header) driver.Usage {
	var u driver.Usage
	raw := h.Get(UsageHeader)
	if raw == "" || len(raw) > 4096 || json.Unmarshal([]byte(raw), &u) != nil {
		return driver.Usage{}
	}
	if handler.CheckUsage(u) != nil {
		return driver.Usage{} // impossible figures, as a malformed header
	}
	if !handler.IsObject(u.Parameters) {
		u.Parameters = nil // the rest of the report stands
	}
	return u
}

// DryRun rehearses the call as params.dry_run says (docs/design/semantics.md section
// 7): "none" (the default) says what request would be sent without
// sending anything; "head" sends a HEAD request to the URL, to show it
// answers; "url" sends the same request, body and all, to
// params.dry_run_url, a validation endpoint whose JSON answer is the dry
// run's result (what :expect checks). Requests a dry run sends carry
// Rbd-Dry-Run: true.
func (h *httpCall) DryRun(ctx context.Context, c *handler.Call) (handler.Result, error) {
	method, target, err := requestLine(h.deps, c)
	if err != nil {
		return handler.Result{}, err
	}
	mode, _ := c.Params["dry_run"].(string)
	switch mode {
	case "head":
		cc := *c
		cc.Params = withParam(c.Params, "method", http.MethodHead)
		if _, err := send(ctx, h.deps, &cc, nil); err != nil {
			return handler.Result{}, err
		}
		return handler.Complete(map[string]any{"dry_run": true, "method": http.MethodHead, "url": redactURL(target), "reachable": true}), nil
	case "url":
		cc := *c
		cc.Params = withParam(c.Params, "url", c.Params["dry_run_url"])
		resp, err := send(ctx, h.deps, &cc, c.Args)
		if err != nil {
			return handler.Result{}, err
		}
		return handler.Complete(resp), nil
	}
	return handler.Complete(map[string]any{"dry_run": true, "method": method, "url": redactURL(target)}), nil
}

// withParam is a copy of params with one of them replaced.
func withParam(params map[string]any, name string, value any) map[string]any {
	out := make(map[string]any, len(params)+1)
	for k, v := range params {
		out[k] = v
	}
	out[name] = value
	return out
}

var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

func checkHTTP(m map[string]any) error {
	p := newParams(m, "url", "method", "headers", "dry_run", "dry_run_url", "redirects")
	switch r := p.str("redirects", false); r {
	case "", "none", "same_host":
	default:
		p.fail("redirects", "param \"redirects\" %q must be none (the default) or same_host; a call never follows a redirect to another host", r)
	}
	if u := p.str("url", true); u != "" {
		parsed, err := url.Parse(u)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			p.fail("url", "param \"url\" %q must be an absolute http or https URL", u)
		}
	}
	switch mode := p.str("dry_run", false); mode {
	case "", "none", "head":
	case "url":
		u := p.str("dry_run_url", false)
		parsed, err := url.Parse(u)
		if u == "" || err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			p.fail(dryRunURLParam(m), "param \"dry_run\" url needs \"dry_run_url\", an absolute http or https URL of the validation endpoint")
		}
	default:
		p.fail("dry_run", "param \"dry_run\" %q must be none, head or url", mode)
	}
	if method := p.str("method", false); method != "" && !slices.Contains(httpMethods, method) {
		p.fail("method", "param \"method\" %q must be one of %s", method, strings.Join(httpMethods, ", "))
	}
	if h, ok := m["headers"]; ok {
		headers, isMap := h.(map[string]any)
		if !isMap {
			p.fail("headers", "param \"headers\" must be a mapping of header names to strings")
		}
		for k, v := range headers {
			if _, isStr := v.(string); !isStr {
				p.fail("headers", "header %q must be a string", k)
			}
		}
	}
	return p.err()
}

// dryRunURLParam is the param a missing or bad dry_run_url is reported
// at: dry_run_url when given, else dry_run, which asks for it.
func dryRunURLParam(m map[string]any) string {
	if _, ok := m["dry_run_url"]; ok {
		return "dry_run_url"
	}
	return "dry_run"
}
