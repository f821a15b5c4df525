package compiler

import (
	"github.com/runbookdev/runbook/lang"
)

// failureBinding is the reserved binding a failure hook reads the failure
// it runs after from: @failure (docs/design/language.md v1.2).
const failureBinding = "failure"

// failuresBinding is the reserved binding of every failure a hook runs
// after: @failures, the list of failed steps in the order they failed
// (docs/design/language.md v1.4), each shaped as @failure. It is frozen as
// {"$failure": "failures..."}, like @failure.
const failuresBinding = "failures"

// failureSchema types @failure for the checks of a hook's references: the
// error code and message of the failure that ended the runbook, the step
// that failed (empty for a cancellation), and the runbook's final status.
var failureSchema = map[string]any{
	"type":                 "object",
	"additionalProperties": false,
	"properties": map[string]any{
		"code":    map[string]any{"type": "string"},
		"message": map[string]any{"type": "string"},
		"step":    map[string]any{"type": "string"},
		"status":  map[string]any{"type": "string", "enum": []any{"failed", "partial", "cancelled"}},
	},
}

// failuresSchema types @failures: a list of what @failure is.
var failuresSchema = map[string]any{"type": "array", "items": failureSchema}

// FailuresSchema returns the schema of @failures, for the language
// server.
func FailuresSchema() map[string]any { return failuresSchema }

// FailureSchema returns the schema of @failure, for tools that describe
// it (the language server's completion and hover).
func FailureSchema() map[string]any { return failureSchema }

// addHooks registers the calls of a file's (on-failure ...) forms as hook
// steps. A runbook holds at most one such form, across its files and
// whatever it is extending (E053); the calls of another are still
// checked.
func (a *analysis) addHooks(f *lang.File, offset int) (last int) {
	for _, h := range f.OnFailure {
		switch {
		case a.firstHooks != nil:
			a.diags.Errorf(lang.EOnFailure, h.HeadRange, "a runbook holds one (on-failure ...); move these calls into the first").
				WithRelated(a.firstHooks.HeadRange, "the first (on-failure ...) is here")
		case a.baseHooks():
			a.diags.Errorf(lang.EOnFailure, h.HeadRange, "the running runbook has its (on-failure ...) already; a runbook holds one")
		default:
			a.firstHooks = h
		}
		for _, c := range h.Calls {
			a.addStep(f, c, offset, true)
			last = max(last, lastIndex(c))
		}
	}
	return last
}

// baseHooks reports whether the runbook being extended has hooks.
func (a *analysis) baseHooks() bool {
	if a.base == nil {
		return false
	}
	for _, s := range a.base.Steps {
		if s.Kind == KindHook {
			return true
		}
	}
	return false
}

// hookArgs replaces the calls nested in a hook's arguments, reporting each
// (E053): a nested call would be a hook of its own that the hook refers
// to, and hooks run side by side, none after another.
func (a *analysis) hookArgs(s *step) {
	for i, arg := range s.args {
		if !hasNestedCall(arg.Value) {
			continue
		}
		lowered := *arg
		lowered.Value = a.dropCalls(arg.Value)
		s.args[i] = &lowered
	}
}

func (a *analysis) dropCalls(v lang.Value) lang.Value {
	switch v := v.(type) {
	case *lang.Call:
		a.diags.Errorf(lang.EOnFailure, v.Span, "a hook cannot hold a nested call: it would be a hook of its own, and hooks run side by side; write (%s ...) as a hook of its own", v.Verb)
		return &lang.Bad{Span: v.Span}
	case *lang.List:
		out := &lang.List{Span: v.Span, Items: make([]lang.Value, len(v.Items))}
		for i, item := range v.Items {
			out.Items[i] = a.dropCalls(item)
		}
		return out
	case *lang.Map:
		out := &lang.Map{Span: v.Span, Entries: make([]*lang.Arg, len(v.Entries))}
		for i, e := range v.Entries {
			lowered := *e
			lowered.Value = a.dropCalls(e.Value)
			out.Entries[i] = &lowered
		}
		return out
	case *lang.Str:
		out := &lang.Str{Span: v.Span, HeadRange: v.HeadRange, Parts: make([]lang.Value, len(v.Parts))}
		for i, p := range v.Parts {
			out.Parts[i] = a.dropCalls(p)
		}
		return out
	}
	return v
}
