package machine

import "github.com/runbookdev/runbook/rbtype"

// failureMode is the failure mode a step's failure takes
// (docs/design/semantics.md section 5): by its error code when the call
// names one (:on-failure {"BUDGET_EXCEEDED" "abort" "default" "continue"},
// docs/design/language.md v1.4), else the step's effective mode. A
// failure mode is read only of a failed step, whose code the row keeps,
// so the mode a failure was decided with is the one every later round
// (settle, propagate, hooks) reads again.
func (t *transition) failureMode(s *rbtype.Step) rbtype.OnFailure {
	if t.plan == nil || s == nil {
		return rbtype.OnFailureIsolate
	}
	ps, ok := t.plan.Steps[s.Key]
	if !ok {
		return rbtype.OnFailureIsolate
	}
	return ps.FailureMode(s.ErrorCode).Effective()
}
