package compiler

import (
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// warnUntaggedExternal reports (V032, rbc lint only) each external_call
// verb the runbook calls that carries no policy_tags, once, at its
// definition's side_effects, with the first call beside it. A policy lets
// a step reaching outside run unattended only by one of its tags
// (docs/design/semantics.md section 17), so such a verb's every step waits
// at a gate, under any policy: the verb's author should say what it does
// (read_only, external_send, ...) so that an operator can decide.
func (a *analysis) warnUntaggedExternal(steps []*step) {
	if !a.opts.Lint {
		return
	}
	seen := map[string]bool{}
	for _, s := range steps {
		if s.def == nil || s.call == nil {
			continue
		}
		name := s.def.FullName()
		if seen[name] || s.def.Execution.SideEffects != rbtype.SideEffectsExternalCall || len(s.def.Execution.PolicyTags) > 0 {
			continue
		}
		seen[name] = true
		a.diags.Warnf(lang.VUntaggedExternal, s.def.FieldRange("execution.side_effects"),
			"verb %s's side effects are external_call, but it has no policy_tags, so no policy can let its steps run unattended", name).
			WithRelated(s.call.VerbRange, "called here").
			WithNote("add policy_tags saying what it does (read_only for a lookup, external_send for a message, financial, destructive, ...); without --policy only read_only runs unattended")
	}
}
