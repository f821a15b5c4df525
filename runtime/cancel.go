package runtime

import (
	"fmt"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// cancelRunbook is a cancellation: the runbook's active waits cancelled
// (their attempts' spans ended), its steps not yet final cancelled, their
// events, and the runbook finished as cancelled. A cancelled runbook is
// left as it is. What it cancelled (rb, plan, steps, waits) is kept for
// what follows the commit: the requests to stop.
type cancelRunbook struct {
	by, note   string
	compensate bool

	rb    *driver.Runbook
	plan  *planInfo
	steps []*driver.Step
	waits []driver.Invocation
}

func (c *cancelRunbook) apply(t *transition) error {
	if t.rb.Status == rbtype.RunbookCancelled {
		return nil
	}
	if !t.rb.Status.Running() {
		return fmt.Errorf("%w: runbook %s is already %s", ErrConflict, t.rb.ID, t.rb.Status)
	}
	for _, inv := range t.invocations {
		c.waits = append(c.waits, *inv)
	}
	for _, s := range t.steps {
		if s.Status.Done() || t.isHookStep(s) {
			continue // hooks run after the cancellation (hooks.go)
		}
		if inv := t.invocations[s.ID]; inv != nil {
			// The wait's attempt ends here, cancelled: its span says so.
			t.sawPark(s, inv, "")
			t.attemptEnded(s, inv.Attempt, attemptID(t.rb.ID, s.Key, inv.Attempt), attemptCancelled, rbtype.CodeCancelled, "off")
		}
		t.finishInvocation(s, rbtype.InvocationCancelled)
		s.Status, s.FinishedAt, s.NextAttemptAt = rbtype.StepCancelled, &t.now, nil
		t.touch(s)
		t.event(rbtype.EventStepCancelled, s, nil)
	}
	for _, s := range t.steps {
		t.finishInvocation(s, rbtype.InvocationCancelled) // a wait of a step that is final already
	}
	t.event(rbtype.EventRunbookCancelled, nil, RunbookCancelledData{By: c.by, Note: c.note, Compensate: c.compensate})
	t.setRunbook(rbtype.RunbookCancelled, rbtype.CodeCancelled, "cancelled by "+c.by)
	t.rb.Status = rbtype.RunbookCancelled
	if c.compensate && t.scheduleCompensations() {
		t.runbook.Finished = false // once the compensations have run
	}
	if t.hooksLeft() {
		t.runbook.Finished = false // once the failure hooks have run, after the compensations
	}
	c.rb, c.plan, c.steps = t.rb, t.plan, t.steps
	return nil
}

// recordCancelAsk records the answer to a request to stop a cancelled
// wait's external work.
type recordCancelAsk struct {
	step    string
	attempt int
	typ     rbtype.EventType
	data    any
}

func (c *recordCancelAsk) apply(t *transition) error {
	s, err := t.stepByKey(c.step)
	if err != nil {
		return err
	}
	t.event(c.typ, &driver.Step{Key: s.Key, StepState: driver.StepState{Attempt: c.attempt}}, c.data)
	return nil
}
