package machine

import (
	"github.com/runbookdev/runbook/rbtype"
)

// Failure hooks (docs/language.md, "The plan format"): the calls of
// (on-failure ...), steps of kind hook with no edge into or out of them.
// While the runbook runs they do nothing. When it ends failed, partial or
// cancelled, once its compensations have all run, every hook becomes ready
// at once and runs as an ordinary step: its condition decided, its gate
// requested, leased, retried and reclaimed, with its own idempotency key,
// receipt and events, named HOOK_STARTED, HOOK_SUCCEEDED and HOOK_FAILED
// instead of STEP_*. A hook that fails triggers nothing: no other hook,
// no abort, no compensation. The runbook is finished (finished_at) once
// every hook has ended. A runbook that completes never runs its hooks:
// they are skipped with the reason NO_FAILURE.

// hooking reports whether the runbook is running its failure hooks now:
// it ended failed, partial or cancelled, its compensations have all run,
// and it has not finished.
func (t *transition) hooking() bool {
	if t.plan == nil || len(t.plan.hooks) == 0 || t.Rb.FinishedAt != nil || t.Runbook != nil && t.Runbook.Finished {
		return false
	}
	if !RunsHooks(t.Rb.Status) {
		return false
	}
	return len(t.compensate) == 0 && !t.compensationsLeft()
}

// RunsHooks reports whether a runbook that ended in status runs its
// failure hooks.
func RunsHooks(status rbtype.RunbookStatus) bool {
	return status == rbtype.RunbookFailed || status == rbtype.RunbookPartial || status == rbtype.RunbookCancelled
}

// hooksLeft reports whether a hook has yet to end.
func (t *transition) hooksLeft() bool {
	if t.plan == nil {
		return false
	}
	for _, k := range t.plan.hooks {
		if !t.statusOf(k).Done() {
			return true
		}
	}
	return false
}

// hooksPending reports whether a hook waits to be made ready.
func (t *transition) hooksPending() bool {
	for _, k := range t.plan.hooks {
		if t.statusOf(k) == rbtype.StepPending {
			return true
		}
	}
	return false
}

// settleHooks finishes a runbook whose hooks have all ended.
func (t *transition) settleHooks() {
	if t.hooking() && !t.hooksLeft() {
		t.runbookChange().Finished = true
	}
}

// skipHooks skips the hooks of a runbook that completed: there was no
// failure for them to run after.
func (t *transition) skipHooks() {
	for _, k := range t.plan.hooks {
		if s := t.byKey[k]; s != nil && s.Status == rbtype.StepPending {
			t.moveStep(s, rbtype.StepSkipped)
			s.FinishedAt = &t.Now
			s.ErrorCode, s.ErrorMessage = rbtype.CodeNoFailure, "the runbook completed: a failure hook runs only after a failure"
			t.touch(s)
			t.event(rbtype.EventStepSkipped, s, StepSkippedData{Reason: rbtype.CodeNoFailure})
		}
	}
}

// failureValue is @failure, what the hooks read: the code and message of
// the failure that decided the runbook's final status (the first failed
// step's, in plan order, among those whose failure mode counts for that
// status), that step's key (none for a cancellation), and the status.
func (t *transition) failureValue() map[string]any {
	code, message, step := t.Rb.ErrorCode, t.Rb.ErrorMessage, ""
	if t.Rb.Status == rbtype.RunbookFailed || t.Rb.Status == rbtype.RunbookPartial {
		accepted := t.Rb.Status == rbtype.RunbookPartial
		for _, s := range t.Steps {
			if s.Status != rbtype.StepFailed || t.plan.IsHook(s.Key) {
				continue
			}
			if (t.failureMode(s) == rbtype.OnFailureContinue) == accepted {
				code, message, step = s.ErrorCode, s.ErrorMessage, s.Key
				break
			}
		}
	}
	return map[string]any{"code": string(code), "message": message, "step": step, "status": string(t.Rb.Status)}
}

// hookEvent names a hook's events: HOOK_STARTED, HOOK_SUCCEEDED and
// HOOK_FAILED for what a step's would be STEP_STARTED, STEP_SUCCEEDED and
// STEP_FAILED; the others are a step's.
func hookEvent(typ rbtype.EventType) rbtype.EventType {
	switch typ {
	case rbtype.EventStepStarted:
		return rbtype.EventHookStarted
	case rbtype.EventStepSucceeded:
		return rbtype.EventHookSucceeded
	case rbtype.EventStepFailed:
		return rbtype.EventHookFailed
	}
	return typ
}

// isHookStep reports whether a loaded step is a failure hook.
func (t *transition) isHookStep(s *rbtype.Step) bool { return t.plan != nil && t.plan.IsHook(s.Key) }
