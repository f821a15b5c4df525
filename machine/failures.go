package machine

import (
	"slices"

	"github.com/runbookdev/runbook/rbtype"
)

// failuresValue is @failures, what a hook reads of every failure
// (docs/design/language.md v1.4): each failed step, shaped as @failure
// (code, message, step, and the runbook's final status), in the order
// they failed (by when they finished; steps that failed in one
// transaction in plan order). A runbook that ended with no failed step
// (a cancellation) has the one @failure that says so, so that
// (count @failures) is never 0 in a hook and @failures[0] is always
// readable.
func (t *transition) failuresValue() []any {
	var failed []*rbtype.Step
	for _, s := range t.Steps {
		if s.Status == rbtype.StepFailed && !t.plan.IsHook(s.Key) {
			failed = append(failed, s)
		}
	}
	if len(failed) == 0 {
		return []any{t.failureValue()}
	}
	slices.SortStableFunc(failed, func(a, b *rbtype.Step) int {
		switch {
		case a.FinishedAt == nil || b.FinishedAt == nil:
			return 0
		case a.FinishedAt.Before(*b.FinishedAt):
			return -1
		case b.FinishedAt.Before(*a.FinishedAt):
			return 1
		}
		return 0
	})
	out := make([]any, len(failed))
	for i, s := range failed {
		out[i] = map[string]any{"code": string(s.ErrorCode), "message": s.ErrorMessage, "step": s.Key, "status": string(t.Rb.Status)}
	}
	return out
}
