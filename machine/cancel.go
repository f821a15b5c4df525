package machine

import (
	"fmt"

	"github.com/runbookdev/runbook/rbtype"
)

// CancelRunbook is a cancellation: the runbook's active waits cancelled
// (their attempts' spans ended), its steps not yet final cancelled, their
// events, and the runbook finished as cancelled. A cancelled runbook is
// left as it is. What it cancelled (rb, plan, steps, waits) is kept for
// what follows the commit: the requests to stop.
type CancelRunbook struct {
	By, Note   string
	Compensate bool

	Rb    *rbtype.Runbook
	Plan  *PlanInfo
	Steps []*rbtype.Step
	Waits []rbtype.Invocation
}

func (c *CancelRunbook) apply(t *transition) error {
	if t.Rb.Status == rbtype.RunbookCancelled {
		return nil
	}
	if !t.Rb.Status.Running() && t.Rb.Status != rbtype.RunbookEscalated {
		// An escalated runbook waits for a person, who may resolve it or
		// give it up: it is cancelled as a running one is. The others
		// have ended.
		return fmt.Errorf("%w: runbook %s is already %s", rbtype.ErrConflict, t.Rb.ID, t.Rb.Status)
	}
	for _, inv := range t.invocations {
		c.Waits = append(c.Waits, *inv)
	}
	for _, s := range t.Steps {
		if s.Status.Done() || t.isHookStep(s) {
			continue // hooks run after the cancellation (hooks.go)
		}
		if inv := t.invocations[s.ID]; inv != nil {
			// The wait's attempt ends here, cancelled: its span says so.
			t.sawPark(s, inv, "")
			t.attemptEnded(s, inv.Attempt, AttemptID(t.Rb.ID, s.Key, inv.Attempt), AttemptCancelled, rbtype.CodeCancelled, "off")
		}
		t.finishInvocation(s, rbtype.InvocationCancelled)
		t.moveStep(s, rbtype.StepCancelled)
		s.FinishedAt, s.NextAttemptAt = &t.Now, nil
		t.touch(s)
		t.event(rbtype.EventStepCancelled, s, nil)
	}
	for _, s := range t.Steps {
		t.finishInvocation(s, rbtype.InvocationCancelled) // a wait of a step that is final already
	}
	t.event(rbtype.EventRunbookCancelled, nil, RunbookCancelledData{By: c.By, Note: c.Note, Compensate: c.Compensate})
	escalated := t.Rb.Status == rbtype.RunbookEscalated
	t.setRunbook(rbtype.RunbookCancelled, rbtype.CodeCancelled, "cancelled by "+c.By)
	// An escalated runbook had finished; what its cancel runs (its
	// compensations, its hooks) must end before it finishes again.
	if escalated {
		t.Runbook.Reopen, t.Rb.FinishedAt = true, nil
	}
	t.moveRunbook(rbtype.RunbookCancelled)
	if c.Compensate && t.scheduleCompensations() {
		t.Runbook.Finished = false // once the compensations have run
	}
	if t.hooksLeft() {
		t.Runbook.Finished = false // once the failure hooks have run, after the compensations
	}
	c.Rb, c.Plan, c.Steps = t.Rb, t.plan, t.Steps
	return nil
}

// RecordCancelAsk records the answer to a request to stop a cancelled
// wait's external work.
type RecordCancelAsk struct {
	Step    string
	Attempt int
	Typ     rbtype.EventType
	Data    any
}

func (c *RecordCancelAsk) apply(t *transition) error {
	s, err := t.stepByKey(c.Step)
	if err != nil {
		return err
	}
	t.event(c.Typ, &rbtype.Step{Key: s.Key, StepState: rbtype.StepState{Attempt: c.Attempt}}, c.Data)
	return nil
}
