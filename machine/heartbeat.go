package machine

import (
	"fmt"
	"time"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// StepHeartbeatData is the data of STEP_HEARTBEAT.
type StepHeartbeatData struct {
	CorrelationKey string `json:"correlation_key"`
	// Extend is the extension asked for, as sent.
	Extend string `json:"extend"`
	// TimeoutAt is the wait's timeout after the heartbeat.
	TimeoutAt time.Time `json:"timeout_at"`
	// Clamped: the extension asked went past parked_at + max_park, and
	// the timeout stops there.
	Clamped bool `json:"clamped,omitempty"`
}

// Heartbeat is a heartbeat: the wait's new timeout and its event. The
// new timeout is what it leaves in timeout.
type Heartbeat struct {
	Key     string
	Extend  verbs.Duration
	Timeout time.Time
}

func (c *Heartbeat) apply(t *transition) error {
	var inv *rbtype.Invocation
	for _, i := range t.invocations {
		if i.CorrelationKey == c.Key {
			inv = i
		}
	}
	if inv == nil {
		return fmt.Errorf("%w: the wait on correlation key %q has ended", rbtype.ErrConflict, c.Key)
	}
	step := t.byID[inv.StepID]
	if step == nil {
		return fmt.Errorf("%w: the step waiting on %q is not in its runbook", rbtype.ErrNotFound, c.Key)
	}
	exec := t.execution(step)
	maxPark := exec.Timeouts.MaxParkOrDefault()
	timeout, clamped := t.Now.Add(c.Extend.D), false
	if limit := inv.ParkedAt.Add(maxPark); maxPark > 0 && timeout.After(limit) {
		timeout, clamped = limit, true
	}
	if timeout.Before(inv.TimeoutAt) {
		timeout = inv.TimeoutAt // a heartbeat never brings a timeout closer
	}
	inv.TimeoutAt, c.Timeout = timeout, timeout
	t.invocationUpdates = append(t.invocationUpdates, rbtype.InvocationUpdate{ID: inv.InvocationID, TimeoutAt: &timeout})
	t.event(rbtype.EventStepHeartbeat, step, StepHeartbeatData{
		CorrelationKey: c.Key, Extend: c.Extend.ISO, TimeoutAt: timeout, Clamped: clamped,
	})
	return nil
}
