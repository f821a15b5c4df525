package compiler

import (
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// The reserved keywords of docs/design/language.md: step options, never passed to the
// verb.
const (
	optionAs    = "as"
	optionAfter = "after"
	optionGate  = "gate"
	// optionOnFailure overrides the verb's execution.on_failure for one
	// call (docs/design/semantics.md section 5).
	optionOnFailure = "on-failure"
	// optionExpect gives a full step's dry run the values it must return
	// (docs/design/semantics.md section 7).
	optionExpect = "expect"
	// optionWhen gives the condition on which the step runs (docs/design/language.md
	// v1.2); false skips it.
	optionWhen = "when"
)

func isOption(name string) bool {
	switch name {
	case optionAs, optionAfter, optionGate, optionOnFailure, optionExpect, optionWhen,
		optionTimeoutResult, optionRemindAfter, optionGateWhen, optionApprovers, optionParallel:
		return true
	}
	return false
}

// StepOptions lists the reserved keywords of a call, for tools that
// complete or describe them (the language server).
var StepOptions = []string{optionAs, optionAfter, optionGate, optionGateWhen, optionApprovers, optionWhen, optionOnFailure,
	optionExpect, optionTimeoutResult, optionRemindAfter, optionParallel}

// readOptions separates a call's step options from its arguments, checking
// the options' shapes (E041) and repeats (E023).
func (a *analysis) readOptions(s *step) {
	// A call's few arguments are looked through for an earlier one of the
	// same name rather than kept in a map; a call of many uses the map.
	// Either finds the first of the name. The call's arguments are room
	// enough for its verb's, in one allocation.
	var seen map[string]*lang.Arg
	if len(s.call.Args) > smallCall {
		seen = make(map[string]*lang.Arg, len(s.call.Args))
	}
	s.args = make([]*lang.Arg, 0, len(s.call.Args))
	for i, arg := range s.call.Args {
		if prev := firstNamed(seen, s.call.Args[:i], arg.Name); prev != nil {
			d := a.diags.Errorf(lang.EDuplicateArg, arg.NameRange, "%s is given twice", displayArg(arg.Name)).
				WithRelated(prev.NameRange, "first given here")
			removeArgFix(d, s.file, s.call.VerbRange.End, s.call.Args, i, ":"+arg.Name)
			continue
		}
		if seen != nil {
			seen[arg.Name] = arg
		}
		switch arg.Name {
		case optionAs:
			ref, ok := arg.Value.(*lang.Ref)
			if !ok || len(ref.Path) > 0 {
				a.diags.Errorf(lang.EBadOption, arg.Value.Range(), ":as takes a bare reference that names the step, as in :as @case")
				continue
			}
			if ref.Name == failureBinding {
				a.diags.Errorf(lang.EBadOption, ref.NameRange, "@%s is reserved: inside (on-failure ...) it names the failure the hooks run after; choose another name", failureBinding)
				continue
			}
			s.binding = ref
		case optionAfter:
			s.after = a.afterRefs(arg.Value)
		case optionGate:
			a.readGate(s, arg)
		case optionOnFailure:
			a.readOnFailure(s, arg)
		case optionExpect:
			a.readExpect(s, arg)
		case optionWhen:
			s.whenArg = arg // checked once every step is known (checkWhen)
		case optionTimeoutResult:
			a.readTimeoutResult(s, arg)
		case optionRemindAfter:
			a.readRemindAfter(s, arg)
		case optionGateWhen:
			a.readGateWhen(s, arg)
		case optionApprovers:
			a.readApprovers(s, arg)
		case optionParallel:
			a.readParallel(s, arg)
		default:
			s.args = append(s.args, arg)
		}
	}
}

// smallCall is the most arguments readOptions looks through one by one.
const smallCall = 16

// firstNamed is the first of before named name, nil for none: looked up in
// seen when there is a map, else looked for.
func firstNamed(seen map[string]*lang.Arg, before []*lang.Arg, name string) *lang.Arg {
	if seen != nil {
		return seen[name]
	}
	for _, arg := range before {
		if arg.Name == name {
			return arg
		}
	}
	return nil
}

// afterRefs reads `:after @x` or `:after [@x @y]`.
func (a *analysis) afterRefs(v lang.Value) []*lang.Ref {
	var items []lang.Value
	if list, ok := v.(*lang.List); ok {
		items = list.Items
	} else {
		items = []lang.Value{v}
	}
	refs := make([]*lang.Ref, 0, len(items))
	for _, item := range items {
		ref, ok := item.(*lang.Ref)
		if !ok || len(ref.Path) > 0 {
			a.diags.Errorf(lang.EBadOption, item.Range(), ":after takes bare references to steps, as in :after @review or :after [@a @b]")
			continue
		}
		refs = append(refs, ref)
	}
	return refs
}

func (a *analysis) readGate(s *step, arg *lang.Arg) {
	str, ok := arg.Value.(*lang.String)
	var gate rbtype.Gate
	if ok {
		gate = rbtype.Gate(str.Value)
	}
	switch {
	case !ok:
		a.diags.Errorf(lang.EBadOption, arg.Value.Range(), `:gate takes a string, as in :gate "human_confirm"`)
	case gate == rbtype.GateHumanConfirm:
		s.gate = gate
	case gate == rbtype.GateNone && s.def != nil && s.def.Risk == rbtype.RiskHigh:
		a.diags.Errorf(lang.EBadOption, str.Span, "verb %q is high risk, so its steps always wait at gate %q, which a call cannot remove", s.def.FullName(), rbtype.GateHumanConfirm)
	case gate == rbtype.GateNone && s.def != nil && s.def.Execution.Gate != rbtype.GateNone:
		a.diags.Errorf(lang.EBadOption, str.Span, "verb %q declares gate %q, which a call cannot remove", s.def.FullName(), s.def.Execution.Gate)
	case gate == rbtype.GateNone:
		// Allowed and meaningless: the verb has no gate to keep.
	default:
		d := a.diags.Errorf(lang.EBadOption, str.Span, "unknown gate %q", str.Value)
		if close := lang.Suggest(str.Value, []string{string(rbtype.GateHumanConfirm)}); len(close) > 0 {
			d.WithReplacements(str.Span, str.Raw, close, strconv.Quote)
		} else {
			d.WithNote("the only gate is %q", rbtype.GateHumanConfirm)
		}
	}
}

// readOnFailure reads `:on-failure "isolate"`: one of the failure modes,
// or E060 with the close ones.
func (a *analysis) readOnFailure(s *step, arg *lang.Arg) {
	if m, ok := arg.Value.(*lang.Map); ok {
		a.readOnFailureByCode(s, m)
		return
	}
	str, ok := arg.Value.(*lang.String)
	if !ok {
		a.diags.Errorf(lang.EBadOnFailure, arg.Value.Range(), `:on-failure takes a string, as in :on-failure "isolate", or a map from error code to mode, as in :on-failure {"BUDGET_EXCEEDED" "abort" "default" "continue"}`)
		return
	}
	names := make([]string, len(rbtype.OnFailures))
	for i, m := range rbtype.OnFailures {
		names[i] = string(m)
		if str.Value == names[i] {
			s.onFailure = m
			return
		}
	}
	d := a.diags.Errorf(lang.EBadOnFailure, str.Span, "unknown :on-failure value %q (expected %s)", str.Value, strings.Join(names, ", "))
	d.WithReplacements(str.Span, str.Raw, lang.Suggest(str.Value, names), strconv.Quote)
}

// readExpect reads `:expect {:status "approved"}`: a map of result fields
// (a dotted path names a nested one) to literal values, which the step's
// dry run must return before the call commits. Only a verb at execution
// level full is verified, so anywhere else it is E061.
func (a *analysis) readExpect(s *step, arg *lang.Arg) {
	m, ok := arg.Value.(*lang.Map)
	if !ok || len(m.Entries) == 0 {
		a.diags.Errorf(lang.EBadOption, arg.Value.Range(), `:expect takes a map of result fields to values, as in :expect {:status "approved"}`)
		return
	}
	expect := make(map[string]any, len(m.Entries))
	for _, e := range m.Entries {
		if !isLiteral(e.Value) {
			a.diags.Errorf(lang.EBadOption, e.Value.Range(), ":expect's values are literals: what the dry run must return is known when the runbook is written")
			return
		}
		expect[e.Name] = jsonValue(e.Value)
	}
	if s.def != nil && s.def.Execution.Level.Effective() != rbtype.LevelFull {
		a.diags.Errorf(lang.EExpectNotFull, arg.NameRange,
			":expect on %s, whose execution level is %s: only a full verb's dry run is verified before it commits; remove :expect, or make the verb level full",
			s.def.FullName(), s.def.Execution.Level.Effective())
		return
	}
	s.expect = expect
}

func displayArg(name string) string {
	if isOption(name) {
		return "step option :" + name
	}
	return "argument :" + name
}
