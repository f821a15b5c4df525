package registry

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// The built-in handlers of docs/design/verbs.md, with the params each accepts.
func builtinSpecs() []HandlerSpec {
	return []HandlerSpec{
		{Name: "core.echo", Kind: rbtype.KindSync, Summary: "returns its arguments (tests, wiring, constants)",
			CheckParams: checkEcho, DryRun: true},
		{Name: "core.fail", Kind: rbtype.KindSync, Summary: "fails with the code given in params (tests, drills)",
			CheckParams: checkFail},
		{Name: "http.call", Kind: rbtype.KindSync, Summary: "one HTTP request, with the Idempotency-Key header",
			CheckParams: checkHTTP, DryRun: true},
		{Name: "http.start", Kind: rbtype.KindDurable, Summary: "POSTs a task with a correlation key and callback, then parks",
			CheckParams: checkStart},
		{Name: "await.notification", Kind: rbtype.KindDurable, Summary: "parks until a notification arrives",
			CheckParams: checkNoParams},
		{Name: "timer.sleep", Kind: rbtype.KindDurable, Summary: "parks until a time or for a duration",
			CheckParams: checkSleep},
		{Name: CRUDHandler, Kind: rbtype.KindSync, Summary: "insert, select, update, delete or upsert on one table",
			CheckParams: checkCRUD, DryRun: true},
	}
}

// params checks the set of keys and reads them with types, collecting a
// problem per param.
type params struct {
	m     map[string]any
	probs ParamProblems
}

func newParams(m map[string]any, allowed ...string) *params {
	p := &params{m: m}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			p.probs = append(p.probs, ParamProblem{Param: k, Key: true,
				Message: fmt.Sprintf("unknown param %q (valid: %s)", k, strings.Join(allowed, ", "))})
		}
	}
	return p
}

// fail records a problem with param's value; "" for the params as a
// whole (a required param left out).
func (p *params) fail(param, format string, args ...any) {
	p.probs = append(p.probs, ParamProblem{Param: param, Message: fmt.Sprintf(format, args...)})
}

func (p *params) err() error {
	if len(p.probs) == 0 {
		return nil
	}
	return p.probs
}

func (p *params) str(key string, required bool) string {
	v, ok := p.m[key]
	if !ok {
		if required {
			p.fail("", "param %q is required", key)
		}
		return ""
	}
	s, ok := v.(string)
	if !ok || s == "" {
		p.fail(key, "param %q must be a non-empty string", key)
	}
	return s
}

func (p *params) strings(key string) []string {
	v, ok := p.m[key]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		p.fail(key, "param %q must be a list of names", key)
		return nil
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		s, ok := item.(string)
		if !ok {
			p.fail(key, "param %q must be a list of names", key)
			return nil
		}
		out = append(out, s)
	}
	return out
}

func checkNoParams(m map[string]any) error { return newParams(m).err() }

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

func checkFail(m map[string]any) error {
	p := newParams(m, "code", "message")
	p.str("code", true)
	if _, ok := m["message"]; ok {
		p.str("message", false)
	}
	return p.err()
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

// checkStart checks http.start's params: http.call's, and an optional
// cancel_url, where a cancelled runbook tells the outside world to stop.
func checkStart(m map[string]any) error {
	rest := make(map[string]any, len(m))
	for k, v := range m {
		if k != "cancel_url" {
			rest[k] = v
		}
	}
	var probs ParamProblems
	if err := checkHTTP(rest); err != nil {
		probs = append(probs, err.(ParamProblems)...)
	}
	if raw, ok := m["cancel_url"]; ok {
		u, isStr := raw.(string)
		parsed, err := url.Parse(u)
		if !isStr || err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			probs = append(probs, ParamProblem{Param: "cancel_url",
				Message: fmt.Sprintf("param \"cancel_url\" %v must be an absolute http or https URL", raw)})
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return probs
}

// dryRunURLParam is the param a missing or bad dry_run_url is reported
// at: dry_run_url when given, else dry_run, which asks for it.
func dryRunURLParam(m map[string]any) string {
	if _, ok := m["dry_run_url"]; ok {
		return "dry_run_url"
	}
	return "dry_run"
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

// checkCRUD checks pg.crud's params but for the table's name, which the
// catalogue checks (checkCRUDTable) because the rule needs rbd's schema.
// Identifiers come from verb files, never from runbook arguments; values
// are always bound as parameters.
func checkCRUD(m map[string]any) error {
	p := newParams(m, "op", "table", "key", "columns", "returning")
	op := rbtype.CRUDOp(p.str("op", true))
	if op != "" && !slices.Contains(rbtype.CRUDOps, op) {
		p.fail("op", "param \"op\" %q must be one of %s", op, joinOps(rbtype.CRUDOps))
	}
	p.str("table", true)
	for _, key := range []string{"key", "columns", "returning"} {
		for _, c := range p.strings(key) {
			if CheckIdentifier(c) != nil {
				p.fail(key, "param %q: %q is not a lower-case SQL column name", key, c)
			}
		}
	}
	if (op == rbtype.CRUDUpdate || op == rbtype.CRUDDelete || op == rbtype.CRUDUpsert) && len(p.strings("key")) == 0 {
		p.fail("op", "op %q needs param \"key\": the columns that select the row", op)
	}
	return p.err()
}

func joinOps(ops []rbtype.CRUDOp) string {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = string(op)
	}
	return strings.Join(names, ", ")
}
