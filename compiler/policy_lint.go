package compiler

import (
	"github.com/runbookdev/runbook/lang"
)

// warnUnmentionedTags reports (W003) each policy tag of the runbook's
// verbs that no rule of Options.Policy mentions, once, at the first call
// of a verb carrying it: a step so tagged runs as its verb says, and
// nobody decided whether it should wait for a person
// (docs/design/semantics.md section 10).
func (a *analysis) warnUnmentionedTags(steps []*step) {
	pol := a.opts.Policy
	if pol == nil {
		return
	}
	seen := map[string]bool{}
	for _, s := range steps {
		if s.def == nil || s.call == nil {
			continue
		}
		for _, tag := range s.def.Execution.PolicyTags {
			if seen[tag] || pol.Mentions(tag) {
				continue
			}
			seen[tag] = true
			a.diags.Warnf(lang.WPolicyUnmentioned, s.call.VerbRange,
				"verb %s is tagged %s, which no rule of policy %s mentions", s.def.FullName(), tag, pol.Source).
				WithRelated(s.def.FieldRange("policy_tags"), "%s's policy tags", s.def.FullName()).
				WithNote("a step so tagged runs as its verb says; name %s in a gate, deny or auto_exec list of the policy so that someone has decided", tag)
		}
	}
}
