package compiler

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// The step options of docs/design/language.md v1.4.
const (
	// optionTimeoutResult is the result a durable step succeeds with when
	// its park times out.
	optionTimeoutResult = "timeout-result"
	// optionRemindAfter runs the verb's escalation once, after a duration,
	// without ending the wait.
	optionRemindAfter = "remind-after"
	// optionGateWhen gates the step only when its condition holds.
	optionGateWhen = "gate-when"
	// optionApprovers names the group whose tokens may decide the step's
	// gate.
	optionApprovers = "approvers"
	// optionParallel, on a call in a for-each body, bounds how many of
	// that call's iterations run at once.
	optionParallel = "parallel"
)

// onFailureDefault is the entry of an :on-failure map that applies to
// every code the map does not name.
const onFailureDefault = "default"

// groupName is what a group of tokens may be called: what token lines
// write after groups= (docs/reference/tokens.md).
var groupName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// readTimeoutResult reads `:timeout-result {:decision "revoke"}`: a map of
// literals, for a durable step, that its verb's output_schema admits
// (E057).
func (a *analysis) readTimeoutResult(s *step, arg *lang.Arg) {
	m, ok := arg.Value.(*lang.Map)
	if !ok || !isLiteral(m) {
		a.diags.Errorf(lang.ETimeoutResult, arg.Value.Range(), `:timeout-result takes a map of literals, the result the step succeeds with when its wait times out, as in :timeout-result {:decision "revoke"}`)
		return
	}
	if s.def == nil {
		return
	}
	if s.def.Execution.Kind != rbtype.KindDurable {
		a.diags.Errorf(lang.ETimeoutResult, arg.NameRange, ":timeout-result on %s, which does not wait (kind %s): only a durable step's wait times out", s.def.FullName(), s.def.Execution.Kind)
		return
	}
	v := jsonValue(m).(map[string]any)
	if out := s.def.OutputSchema; out != nil {
		if err := out.Validate(v); err != nil {
			a.diags.Errorf(lang.ETimeoutResult, m.Span, ":timeout-result does not match the output_schema of %s: %v", s.def.FullName(), err)
			return
		}
	}
	a.checkMapKeys(s, m)
	s.timeoutResult = v
}

// readRemindAfter reads `:remind-after "P7D"`: an ISO 8601 duration,
// shorter than the park's timeout, on a durable step whose verb has an
// escalation to remind with (E058).
func (a *analysis) readRemindAfter(s *step, arg *lang.Arg) {
	str, ok := arg.Value.(*lang.String)
	if !ok {
		a.diags.Errorf(lang.ERemindAfter, arg.Value.Range(), `:remind-after takes an ISO 8601 duration, as in :remind-after "P7D"`)
		return
	}
	d, err := verbs.ParseDuration(str.Value)
	if err != nil {
		a.diags.Errorf(lang.ERemindAfter, str.Span, ":remind-after: %v", err)
		return
	}
	if s.def == nil {
		return
	}
	t := s.def.Execution.Timeouts
	switch {
	case s.def.Execution.Kind != rbtype.KindDurable || t.ParkTimeout == nil:
		a.diags.Errorf(lang.ERemindAfter, arg.NameRange, ":remind-after on %s, which does not wait (kind %s): only a durable step is reminded", s.def.FullName(), s.def.Execution.Kind)
	case d.D >= t.ParkTimeout.D:
		a.diags.Errorf(lang.ERemindAfter, str.Span, ":remind-after %s is not before the wait's timeout (%s, the park_timeout of %s): the reminder would never be sent", str.Value, t.ParkTimeout.ISO, s.def.FullName())
	case t.Escalation == nil:
		a.diags.Errorf(lang.ERemindAfter, arg.NameRange, ":remind-after runs the escalation of %s, which has none (timeouts.escalation in its verb file)", s.def.FullName())
	default:
		s.remindAfter = str.Value
	}
}

// readGateWhen notes `:gate-when COND`, checked with the conditions once
// every step is known (checkGateWhen). A gate the verb declares stays
// whatever the condition says, so there it is E041.
func (a *analysis) readGateWhen(s *step, arg *lang.Arg) {
	if s.def != nil && s.def.Gate() != rbtype.GateNone {
		a.diags.Errorf(lang.EBadOption, arg.NameRange, "verb %q always waits at gate %q; :gate-when cannot lift it", s.def.FullName(), s.def.Gate())
	}
	s.gateWhenArg = arg
}

// checkGateWhen checks a step's :gate-when and freezes its condition.
func (a *analysis) checkGateWhen(s *step) {
	if s.gateWhenArg == nil {
		return
	}
	if s.gate != "" {
		a.diags.Errorf(lang.EBadOption, s.gateWhenArg.NameRange, ":gate gates the step always and :gate-when only when its condition holds; give one of them")
	}
	s.gateWhen = a.topCondition(s, s.gateWhenArg.Value, ":"+optionGateWhen)
}

// readApprovers reads `:approvers "compliance"`: the group whose tokens
// may decide the step's gate.
func (a *analysis) readApprovers(s *step, arg *lang.Arg) {
	str, ok := arg.Value.(*lang.String)
	if !ok || !groupName.MatchString(str.Value) {
		a.diags.Errorf(lang.EBadOption, arg.Value.Range(), `:approvers takes the name of a group of tokens, as in :approvers "compliance"`)
		return
	}
	s.approvers = str.Value
}

// readParallel reads a call's `:parallel N`, which only a call inside a
// for-each body takes.
func (a *analysis) readParallel(s *step, arg *lang.Arg) {
	n, ok := arg.Value.(*lang.Int)
	switch {
	case s.loop == nil:
		a.diags.Errorf(lang.EBadOption, arg.NameRange, ":parallel bounds a call's iterations, so it is given to a call inside (for-each ...); at the top level every step runs once")
	case !ok || n.Value < 1:
		a.diags.Errorf(lang.EBadOption, arg.Value.Range(), ":parallel takes a whole number of at least 1, as in :parallel 5")
	case n.Value > int64(a.opts.maxFanout()):
		a.diags.Errorf(lang.EBadOption, n.Span, ":parallel %d is more than a list may hold (%d)", n.Value, a.opts.maxFanout())
	default:
		s.parallel = int(n.Value)
	}
}

// readOnFailureByCode reads `:on-failure {"BUDGET_EXCEEDED" "abort"
// "default" "continue"}`, written as a map whose keys are error codes:
// {:BUDGET_EXCEEDED "abort" :default "continue"}. Each code must be the
// taxonomy's (E060 with the close ones), each mode a failure mode, and
// "default" must be given.
func (a *analysis) readOnFailureByCode(s *step, m *lang.Map) {
	modes := make([]string, len(rbtype.OnFailures))
	for i, mode := range rbtype.OnFailures {
		modes[i] = string(mode)
	}
	codes := make([]string, len(rbtype.Codes))
	for i, c := range rbtype.Codes {
		codes[i] = string(c)
	}
	out := map[string]rbtype.OnFailure{}
	okAll := true
	for _, e := range m.Entries {
		if e.Name != onFailureDefault && !slices.Contains(codes, e.Name) {
			okAll = false
			a.diags.Errorf(lang.EBadOnFailure, e.NameRange, "unknown error code %q in :on-failure (codes: %s, and default)", e.Name, strings.Join(codes, ", ")).
				WithReplacements(e.NameRange, e.Key(), lang.Suggest(e.Name, append(slices.Clone(codes), onFailureDefault)), func(s string) string {
					key := *e
					key.Name = s
					return key.Key()
				})
			continue
		}
		str, ok := e.Value.(*lang.String)
		if !ok || !slices.Contains(modes, str.Value) {
			okAll = false
			d := a.diags.Errorf(lang.EBadOnFailure, e.Value.Range(), "the failure mode for %s must be one of %s", e.Name, strings.Join(modes, ", "))
			if ok {
				d.WithReplacements(str.Span, str.Raw, lang.Suggest(str.Value, modes), strconv.Quote)
			}
			continue
		}
		out[e.Name] = rbtype.OnFailure(str.Value)
	}
	a.checkMapKeys(s, m)
	if _, ok := out[onFailureDefault]; !ok && okAll {
		a.diags.Errorf(lang.EBadOnFailure, m.Span, `an :on-failure map gives the mode of every other code under "default", as in {"BUDGET_EXCEEDED" "abort" "default" "continue"}`)
		return
	}
	if !okAll {
		return
	}
	s.onFailure = out[onFailureDefault]
	delete(out, onFailureDefault)
	if len(out) > 0 {
		s.onFailureByCode = out
	}
}

// FailureMode is the failure mode of the step's failure with code: its
// entry in OnFailureByCode (:on-failure by code, docs/design/language.md
// v1.4), else OnFailure. The runtime decides a failure with it.
func (s *Step) FailureMode(code rbtype.ErrorCode) rbtype.OnFailure {
	if mode, ok := s.OnFailureByCode[string(code.Canonical())]; ok {
		return mode
	}
	return s.OnFailure
}
