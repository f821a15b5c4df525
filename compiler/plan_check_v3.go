package compiler

import (
	"slices"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// The plan check of version 3 (docs/design/language.md v1.4): a submitted
// plan's v1.4 forms are held to what the compiler would have written, so
// that the runtime never meets one it cannot run.

// checkV3Step checks a step's v1.4 call options. Their values are the
// plan's to choose (they are not part of the execution block), so each is
// checked here as the compiler checks the option.
func (f *flowCheck) checkV3Step() {
	s := f.step
	if s.GateWhen != nil {
		if s.Gate != rbtype.GateHumanConfirm {
			f.problem(lang.EPlanUnreadable, "has gate_when but gate %q: a step gated by a condition carries the gate human_confirm", s.Gate)
		}
		f.cond(s.GateWhen, 0)
	}
	if s.Approvers != "" && !groupName.MatchString(s.Approvers) {
		f.problem(lang.EPlanUnreadable, "has approvers %q, which is not a group's name", s.Approvers)
	}
	for code, mode := range s.OnFailureByCode {
		if !slices.Contains(rbtype.Codes, rbtype.ErrorCode(code)) {
			f.problem(lang.EBadOnFailure, "has on_failure_by_code for %q, which is no error code", code)
		}
		if !slices.Contains(rbtype.OnFailures, mode) {
			f.problem(lang.EBadOnFailure, "has on_failure_by_code %q for %s, which is no failure mode", mode, code)
		}
	}
	if s.Parallel < 0 || s.Parallel > 0 && s.Loop == "" && !strings.HasSuffix(s.Key, "]") {
		f.problem(lang.EPlanUnreadable, "has parallel %d: only a step template of a loop, or its instance, takes a bound of at least 1", s.Parallel)
	}
	exec := s.Execution
	if s.TimeoutResult != nil {
		if exec.Kind != rbtype.KindDurable {
			f.problem(lang.ETimeoutResult, "has timeout_result, but its verb %s does not wait", s.Verb)
		} else if info := f.c.p.Verbs[s.Verb]; info != nil && info.OutputSchema != nil {
			if err := info.OutputSchema.Validate(s.TimeoutResult); err != nil {
				f.problem(lang.ETimeoutResult, "has a timeout_result its verb's output_schema refuses: %v", err)
			}
		}
		f.value(s.TimeoutResult, false, 0)
		if hasAnyMarker(s.TimeoutResult) {
			f.problem(lang.ETimeoutResult, "has a timeout_result that is not literal")
		}
	}
	if s.RemindAfter != "" {
		d, err := verbs.ParseDuration(s.RemindAfter)
		switch {
		case err != nil:
			f.problem(lang.ERemindAfter, "has remind_after: %v", err)
		case exec.Kind != rbtype.KindDurable || exec.Timeouts.ParkTimeout == nil || d.D >= exec.Timeouts.ParkTimeout.D:
			f.problem(lang.ERemindAfter, "has remind_after %s, which is not before its wait's timeout", s.RemindAfter)
		case exec.Timeouts.Escalation == nil:
			f.problem(lang.ERemindAfter, "has remind_after, but its verb %s has no escalation to remind with", s.Verb)
		}
	}
}

// hasAnyMarker reports whether a value holds an object of one key that
// starts with "$".
func hasAnyMarker(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if len(v) == 1 && strings.HasPrefix(k, "$") || hasAnyMarker(item) {
				return true
			}
		}
	case []any:
		for _, item := range v {
			if hasAnyMarker(item) {
				return true
			}
		}
	}
	return false
}

// markerV3 checks a marker of version 3's value forms, and reports
// whether key is one.
func (f *flowCheck) markerV3(key string, x any, inCond bool, depth int) bool {
	switch key {
	case StatusKey:
		name, ok := x.(string)
		target := f.keys[name]
		switch {
		case !ok || target == nil:
			f.problem(lang.EPlanUnreadable, "reads the status of %s, which names no step of the plan", string(appendJSON(nil, x)))
		case target.Kind == KindHook:
			f.problem(lang.EOnFailure, "reads the status of hook %q: hooks run after the runbook has ended", name)
		case !f.hook() && !inCond:
			f.problem(lang.EPlanUnreadable, "reads the status of %q outside a condition", name)
		case !f.hook() && !f.data[[2]string{name, f.step.Key}]:
			f.problem(lang.EPlanUnreadable, "reads the status of %q without a settle edge from it: the condition would be decided before it settles", name)
		}
	case DefaultKey:
		pair, ok := x.([]any)
		if !ok || len(pair) != 2 {
			f.problem(lang.EPlanUnreadable, "has a $default that is not a reference and a value")
			return true
		}
		if m, _ := pair[0].(map[string]any); len(m) != 1 || m[RefKey] == nil && m[ElemKey] == nil && m[FailureKey] == nil {
			f.problem(lang.EPlanUnreadable, "has a $default that does not start with a reference")
		}
		f.value(pair, inCond, depth+1)
	case CountKey:
		f.value(x, inCond, depth+1)
	case IndexKey:
		spec, _ := x.(map[string]any)
		path, _ := spec["path"].(string)
		list, _ := spec["list"].(map[string]any)
		if _, filter := list[FilterKey]; len(spec) != 2 || !filter || len(list) != 1 || !strings.HasPrefix(path, "[") {
			f.problem(lang.EPlanUnreadable, "has a $index that is not an element of a (filter ...)")
			return true
		}
		f.value(list, inCond, depth+1)
	case FilterKey, AnyKey, AllKey:
		spec, ok := x.(map[string]any)
		name, _ := spec["as"].(string)
		if !ok || len(spec) != 3 || name == "" || spec["where"] == nil {
			f.problem(lang.EPlanUnreadable, "has a %s that is not {\"list\", \"as\", \"where\"}", key)
			return true
		}
		f.value(spec["list"], inCond, depth+1)
		where, err := condOf(spec["where"])
		if err != nil {
			f.problem(lang.EPlanUnreadable, "has a %s whose where is not a condition: %v", key, err)
			return true
		}
		f.elems = append(f.elems, name)
		f.condIn(where, depth+1, inCond)
		f.elems = f.elems[:len(f.elems)-1]
	case ElemKey:
		ref, _ := x.(string)
		if !slices.ContainsFunc(f.elems, func(e string) bool {
			return ref == e || strings.HasPrefix(ref, e+".") || strings.HasPrefix(ref, e+"[")
		}) {
			f.problem(lang.EPlanUnreadable, "reads element %s outside the filter, any or all that binds it", string(appendJSON(nil, x)))
		}
	case LitKey, missingKey:
		f.problem(lang.EPlanUnreadable, "holds %s, which only the runtime writes", key)
	default:
		return false
	}
	return true
}
