package compiler

import (
	"slices"
	"strings"

	"github.com/runbookdev/runbook/lang"
)

// checkFlow checks what version 2 of the plan adds (docs/design/language.md v1.2), so
// that the runtime never meets a condition, a hook or a marker it cannot
// run:
//   - a plan of version 1 uses none of them;
//   - a step's kind is hook or none, and no edge joins a hook;
//   - a condition's operator is known (E052) and has its operands (E041):
//     conditions under and, or and not, values under the others, a
//     reference under exists; its depth is bounded like the language's;
//   - each $ref in a condition names a step that is not a hook and, for a
//     step that is not a hook, has a data edge into it, so the condition
//     is evaluated once what it reads is known; each $input names an
//     input of the plan;
//   - $str holds a list, and $failure stands only in a hook and names a
//     field the failure has.
func (c *planCheck) checkFlow() {
	p := c.p
	if p.SchemaVersion < Version2 && p.usesVersion2() {
		c.report(lang.EPlanUnreadable, c.spans.member("schema_version"), "", 0,
			"plan schema_version %d cannot hold conditions, hooks, loops, or (str ...) of run-time values; a plan with them is version %d", p.SchemaVersion, Version2)
		return
	}
	if p.SchemaVersion < SchemaVersion && p.usesVersion3() {
		c.report(lang.EPlanUnreadable, c.spans.member("schema_version"), "", 0,
			"plan schema_version %d cannot hold status tests, defaults, list forms, settle edges or the call options of v1.4; a plan with them is version %d", p.SchemaVersion, SchemaVersion)
		return
	}
	f := &flowCheck{c: c, keys: map[string]*Step{}, inputs: map[string]bool{}, data: map[[2]string]bool{}}
	for _, s := range p.Steps {
		f.keys[s.Key] = s
	}
	for _, in := range p.Inputs {
		f.inputs[in.Name] = true
	}
	for i, e := range p.Edges {
		if e.Kind == EdgeData || e.Kind == EdgeSettle {
			f.data[[2]string{e.From, e.To}] = true
		}
		for _, key := range []string{e.From, e.To} {
			if s := f.keys[key]; s != nil && s.Kind == KindHook {
				c.report(lang.EPlanUnreadable, c.spans.edge(i), "", 0,
					"edge %q → %q joins hook %q: a hook is not part of the DAG, no edge leads into or out of it", e.From, e.To, key)
			}
		}
	}
	for i, s := range p.Steps {
		f.at, f.step = i, s
		if s.Kind != "" && s.Kind != KindHook {
			f.problem(lang.EPlanUnreadable, "has kind %q (expected %q, or none)", s.Kind, KindHook)
			continue
		}
		f.value(s.Args, false, 0)
		if s.When != nil {
			f.cond(s.When, 0)
		}
		f.checkV3Step()
	}
}

// flowCheck is one run of checkFlow, looking at one step at a time.
type flowCheck struct {
	c      *planCheck
	keys   map[string]*Step
	inputs map[string]bool
	data   map[[2]string]bool // data edges, from → to
	at     int
	step   *Step
	// elems are the names the $filter, $any and $all around the value
	// being checked bind.
	elems []string
}

func (f *flowCheck) problem(code lang.Code, format string, args ...any) {
	f.c.report(code, f.c.spans.step(f.at), "", 0, "step %q "+format, append([]any{f.step.Key}, args...)...)
}

func (f *flowCheck) hook() bool { return f.step.Kind == KindHook }

// cond checks a condition and its operands.
func (f *flowCheck) cond(c *Cond, depth int) { f.condIn(c, depth, true) }

// condIn checks a condition; inCond is false for the condition of a list
// form in an argument, whose references need no edge of their own beyond
// the argument's.
func (f *flowCheck) condIn(c *Cond, depth int, inCond bool) {
	if depth > lang.MaxNesting {
		f.problem(lang.EPlanUnreadable, "has a condition nested more than %d deep", lang.MaxNesting)
		return
	}
	if !lang.IsOperator(c.Op) {
		f.problem(lang.EUnknownOperator, "has a condition with unknown operator %q (operators: %s)", c.Op, strings.Join(lang.Operators, " "))
		return
	}
	n := len(c.Args)
	var want string
	switch c.Op {
	case lang.OpAnd, lang.OpOr:
		if n < 2 {
			want = "two or more conditions"
		}
	case lang.OpNot:
		if n != 1 {
			want = "one condition"
		}
	case lang.OpExists:
		if n != 1 {
			want = "one reference"
		}
	default:
		if n != 2 {
			want = "two values"
		}
	}
	if want != "" {
		f.problem(lang.EBadOption, "has a condition whose %s takes %s, found %d", c.Op, want, n)
		return
	}
	for _, arg := range c.Args {
		switch {
		case IsLogical(c.Op):
			if sub, ok := arg.(*Cond); ok && sub != nil {
				f.condIn(sub, depth+1, inCond)
			} else {
				f.problem(lang.EPlanUnreadable, "has a condition whose %s holds something that is not a condition", c.Op)
			}
		case c.Op == lang.OpExists:
			m, _ := arg.(map[string]any)
			_, isRef := m[RefKey]
			_, isFailure := m[FailureKey]
			_, isElem := m[ElemKey]
			if len(m) != 1 || !isRef && !isFailure && !isElem {
				f.problem(lang.EBadOption, "has a condition whose exists takes a reference, not %s", string(appendJSON(nil, arg)))
				continue
			}
			f.value(arg, inCond, depth+1)
		default:
			f.value(arg, inCond, depth+1)
		}
	}
}

// value checks the markers in a plan value. In a condition (inCond), a
// $ref must name a step with a data edge into this one and a $input an
// input of the plan; in arguments only the markers of version 2 are
// checked, so a plan of version 1 is checked as it always was.
func (f *flowCheck) value(v any, inCond bool, depth int) {
	if depth > lang.MaxNesting {
		f.problem(lang.EPlanUnreadable, "has values nested more than %d deep", lang.MaxNesting)
		return
	}
	switch v := v.(type) {
	case []any:
		for _, item := range v {
			f.value(item, inCond, depth+1)
		}
	case map[string]any:
		if len(v) == 1 {
			for k, x := range v {
				if f.marker(k, x, inCond, depth) {
					return
				}
			}
		}
		for _, item := range v {
			f.value(item, inCond, depth+1)
		}
	}
}

// marker checks a one-key object that is a marker, and reports whether it
// was one.
func (f *flowCheck) marker(key string, x any, inCond bool, depth int) bool {
	switch key {
	case RefKey:
		ref, ok := x.(string)
		if inCond {
			f.condRef(ref, ok)
		}
	case InputKey:
		value, ok := x.(string)
		name, _ := splitName(value)
		if inCond && (!ok || !f.inputs[name]) {
			f.problem(lang.EPlanUnreadable, "has a condition reading input %s, which the plan's inputs do not list", string(appendJSON(nil, x)))
		}
	case StrKey:
		parts, ok := x.([]any)
		if !ok {
			f.problem(lang.EPlanUnreadable, "has a $str that is not a list of parts")
			return true
		}
		for _, p := range parts {
			f.value(p, inCond, depth+1)
		}
	case FailureKey:
		path, _ := x.(string)
		switch {
		case !f.hook():
			f.problem(lang.EOnFailure, "reads $failure, which only a hook (kind %q) can", KindHook)
		case !validFailurePath(path):
			f.problem(lang.EPlanUnreadable, "reads $failure %q; the failure is \"failure\" or one of its fields (%s)", path, strings.Join(failureFields(), ", "))
		}
	default:
		return f.markerV3(key, x, inCond, depth)
	}
	return true
}

// condRef checks a $ref of a condition.
func (f *flowCheck) condRef(ref string, ok bool) {
	key, _, found := SplitRef(ref, func(k string) bool { return f.keys[k] != nil })
	switch {
	case !ok || !found:
		f.problem(lang.EPlanUnreadable, "has a condition reading %s, which names no step of the plan", string(appendJSON(nil, ref)))
	case f.keys[key].Kind == KindHook:
		f.problem(lang.EOnFailure, "has a condition reading hook %q: hooks run after the runbook has ended", key)
	case !f.hook() && !f.data[[2]string{key, f.step.Key}]:
		f.problem(lang.EPlanUnreadable, "has a condition reading step %q without a data edge from it: the condition would be evaluated before what it reads is known", key)
	}
}

// validFailurePath reports whether path is @failure or one of its fields.
func validFailurePath(path string) bool {
	if path == failureBinding {
		return true
	}
	if rest, ok := strings.CutPrefix(path, failuresBinding); ok {
		// @failures, one of them, or a field of one: "failures[0].code".
		if rest == "" {
			return true
		}
		end := strings.IndexByte(rest, ']')
		if rest[0] != '[' || end < 2 || strings.Trim(rest[1:end], "0123456789") != "" {
			return false
		}
		rest = rest[end+1:]
		field, ok := strings.CutPrefix(rest, ".")
		return rest == "" || ok && slices.Contains(failureFields(), field)
	}
	field, ok := strings.CutPrefix(path, failureBinding+".")
	return ok && slices.Contains(failureFields(), field)
}

func failureFields() []string {
	props, _ := failureSchema["properties"].(map[string]any)
	out := make([]string, 0, len(props))
	for k := range props {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SplitRef splits the value of a $ref into the key of the step it names
// and the path after it: the key is the longest prefix, cut before a "."
// or a "[" or at the end, for which isKey holds. Keys may hold dots and
// brackets ("screening.run#3", "upload[2]"); binding names never do, so
// the longest match is the step meant. ok is false when no prefix is a
// key. The runtime resolves references with it.
func SplitRef(ref string, isKey func(string) bool) (key, path string, ok bool) {
	for end := len(ref); end > 0; end-- {
		if end < len(ref) && ref[end] != '.' && ref[end] != '[' {
			continue
		}
		if isKey(ref[:end]) {
			return ref[:end], ref[end:], true
		}
	}
	return "", "", false
}
