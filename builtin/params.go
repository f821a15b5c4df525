package builtin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/handler"
)

// params checks the set of keys and reads them with types, collecting a
// problem per param.
type params struct {
	m     map[string]any
	probs handler.ParamProblems
}

func newParams(m map[string]any, allowed ...string) *params {
	p := &params{m: m}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			p.probs = append(p.probs, handler.ParamProblem{Param: k, Key: true,
				Message: fmt.Sprintf("unknown param %q (valid: %s)", k, strings.Join(allowed, ", "))})
		}
	}
	return p
}

// fail records a problem with param's value; "" for the params as a
// whole (a required param left out).
func (p *params) fail(param, format string, args ...any) {
	p.probs = append(p.probs, handler.ParamProblem{Param: param, Message: fmt.Sprintf(format, args...)})
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
