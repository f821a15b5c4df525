package machine

import (
	"strings"
	"time"

	"github.com/runbookdev/runbook/rbtype"
)

// settle ends the runbook when every step is final: failed if any failed
// under abort or isolate (its compensations then run), escalated if any
// escalated, partial if the only failures were accepted (continue),
// complete otherwise.
func (t *transition) settle() {
	if t.Rb.Status != rbtype.RunbookExecuting || len(t.newSteps) > 0 {
		// Finished already, or held open: a held-open runbook finishes
		// only after it is closed, however its steps end. Or grown by an
		// extension: its new steps, stored by this write, have yet to run.
		return
	}
	var failed, accepted, escalated, drafted []string
	for _, s := range t.Steps {
		if t.isHookStep(s) {
			continue // hooks run once the runbook has ended (hooks.go)
		}
		if !s.Status.Done() {
			return
		}
		switch {
		case s.Status == rbtype.StepSkipped && s.ErrorCode == rbtype.CodeDraftOnly:
			drafted = append(drafted, s.Key)
		case s.Status == rbtype.StepFailed && t.failureMode(s) == rbtype.OnFailureContinue:
			accepted = append(accepted, s.Key)
		case s.Status == rbtype.StepFailed:
			failed = append(failed, s.Key)
		case s.Status == rbtype.StepEscalated:
			escalated = append(escalated, s.Key)
		}
	}
	status, event := rbtype.RunbookComplete, rbtype.EventRunbookCompleted
	var data RunbookFinishedData
	switch {
	case len(failed) > 0:
		status, event = rbtype.RunbookFailed, rbtype.EventRunbookFailed
		data.FailedSteps = failed
		first := t.byKey[failed[0]]
		compensating := t.scheduleCompensations()
		t.setRunbook(status, first.ErrorCode, first.ErrorMessage)
		t.Runbook.Finished = !compensating && !t.hooksLeft() // its hooks run after its compensations
	case len(escalated) > 0:
		status, event = rbtype.RunbookEscalated, rbtype.EventRunbookEscalated
		data.EscalatedSteps = escalated
		t.setRunbook(status, rbtype.CodeParkTimeout, "escalated to a person")
		t.Runbook.Finished = !t.escalationsLeft() // an escalation still to page keeps it going
	case len(accepted) > 0 || len(drafted) > 0:
		// A draft is never complete: what it skipped has yet to run
		// (rbd retry ID --execute). DRAFT_ONLY is a reason, not an error.
		status, event = rbtype.RunbookPartial, rbtype.EventRunbookPartial
		data.FailedSteps = accepted
		if len(drafted) > 0 {
			data.Reason, data.SkippedSteps = rbtype.CodeDraftOnly, drafted
			t.setRunbook(status, rbtype.CodeDraftOnly, "a draft_only runbook did not run its steps with outside effects: "+strings.Join(drafted, ", "))
		} else {
			t.setRunbook(status, "", "")
		}
		if len(accepted) > 0 {
			t.Runbook.Finished = !t.hooksLeft() // its failure hooks run next
		} else {
			t.skipHooks() // a draft is no failure
		}
	default:
		t.setRunbook(status, "", "")
		t.skipHooks()
	}
	t.moveRunbook(status)
	t.event(event, nil, data)
}

func (t *transition) setRunbook(status rbtype.RunbookStatus, code rbtype.ErrorCode, message string) {
	c := t.runbookChange()
	c.Status = &status
	if code != "" {
		c.ErrorCode, c.ErrorMessage = &code, &message
		t.Rb.ErrorCode, t.Rb.ErrorMessage = code, message // what the hooks read as @failure
	}
	c.Finished = true // a failing runbook with compensations to run clears this
}

func (t *transition) runbookChange() *rbtype.RunbookChange {
	if t.Runbook == nil {
		t.Runbook = &rbtype.RunbookChange{ID: t.Rb.ID}
	}
	return t.Runbook
}

// nextWake is when the runbook needs a worker again: now if a step can
// start; else the earliest retry or park timeout; else never (only the
// outside world can move it). Lease expiries are not here: keeping them
// would rewrite the runbook row, and its wake_at index, in every
// transaction of a busy runbook, for the rare worker that dies;
// boundByLeases keeps a wake-up no later than they expire, mostly by
// leaving the one the claim set.
func (t *transition) nextWake() *time.Time {
	var next *time.Time
	consider := func(at time.Time) {
		if next == nil || at.Before(*next) {
			at := at
			next = &at
		}
	}
	if t.executing() && (len(t.newSteps) > 0 || len(t.condDue) > 0 || t.later) {
		// An extension's or an expansion's steps are looked at in the next
		// round, and so are conditions and templates waiting for data.
		consider(t.Now)
	}
	if t.executing() && t.templatesToEnd() {
		consider(t.Now)
	}
	if t.hooking() && t.hooksPending() {
		consider(t.Now) // the hooks start in the next round
	}
	if t.executing() {
		for _, s := range t.Steps {
			switch s.Status {
			case rbtype.StepReady:
				if s.ErrorCode == rbtype.CodeBudgetExceeded {
					consider(t.Now.Add(BudgetRecheck)) // held by a budget (budget_reserve.go)
					continue
				}
				consider(t.Now)
			case rbtype.StepFailedRetryable:
				if s.NextAttemptAt != nil {
					consider(*s.NextAttemptAt)
				}
			case rbtype.StepParked:
				if inv, ok := t.invocations[s.ID]; ok {
					consider(inv.TimeoutAt)
					if at, twin := t.twinWake(inv); twin {
						consider(at) // twins.go
					}
					if at, ok := t.reminderAt(s, inv); ok {
						consider(at) // remind.go
					}
				}
			}
		}
	}
	if t.Rb.Status != rbtype.RunbookCancelled {
		for _, s := range t.Steps {
			if s.EscalationStatus == rbtype.CompensationPending {
				consider(t.Now)
			}
		}
	}
	if t.Rb.Status.Compensates() {
		if len(t.compensate) > 0 {
			consider(t.Now) // just marked: the next transaction starts them
		}
		// The next compensation starts once the one running has ended,
		// whose outcome brings the round: none is due while one runs
		// (nextCompensation), and a wake-up now would claim the runbook
		// over and over for nothing until it ends.
		if t.nextCompensation() != nil {
			consider(t.Now)
		}
	}
	return next
}

// wakeChanged reports whether next differs from the stored wake-up, to
// microseconds, which is what the database keeps.
// boundByLeases makes sure a runbook with calls out is looked at once
// their leases could have expired: no sweep looks for expired leases (they
// are columns of unindexed step rows), so a dead worker's steps are found
// by the claim this wake-up brings. Writing the runbook row whenever a
// lease is taken would cost a row per step; a wake-up already set no later
// than the earliest lease's expiry, and still to come, is kept instead.
// That is the common case: the claim that handed the runbook out set one,
// LeaseTTL ahead, before any of its leases were taken.
func (t *transition) boundByLeases(next *time.Time) *time.Time {
	var bound *time.Time
	for _, l := range t.leases {
		if bound == nil || l.ExpiresAt.Before(*bound) {
			at := l.ExpiresAt
			bound = &at
		}
	}
	if bound == nil || next != nil && !next.After(*bound) {
		return next
	}
	if old := t.Rb.WakeAt; old != nil && old.After(t.Now) && !old.After(*bound) {
		return old
	}
	// A wake-up already past (a runbook handed to this worker without a
	// claim, Engine.wakeUp) would have it claimed again for nothing.
	return bound
}

func (t *transition) wakeChanged(next *time.Time) bool {
	old := t.Rb.WakeAt
	if old == nil || next == nil {
		return (old == nil) != (next == nil)
	}
	return !old.Truncate(time.Microsecond).Equal(next.Truncate(time.Microsecond))
}
