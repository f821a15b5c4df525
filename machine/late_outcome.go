package machine

import "github.com/runbookdev/runbook/rbtype"

// A late outcome is the answer to a call whose step was cancelled while
// the call was out (rbd cancel): the step stays cancelled and the result
// is not used, but what the provider spent is spent. Its attempt is
// recorded, cancelled, with the usage the answer reports, so that the
// runbook's and the tenant's budgets count it (docs/design/semantics.md,
// "Budgets hold under concurrency"), and its reservation was given back
// as its lease ended (recordOutcomes).

// recordLate records a late outcome's attempt, if o is one.
func (t *transition) recordLate(s *rbtype.Step, o *Outcome) {
	if o.Purpose != callStep || o.DryRun || s.Status != rbtype.StepCancelled || s.Attempt != o.Attempt {
		return
	}
	t.record(s, o.Attempt, AttemptCancelled, rbtype.CodeCancelled, "off", o.Result.Usage)
}
