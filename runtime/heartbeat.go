package runtime

import (
	"fmt"
	"time"

	"github.com/runbookdev/runbook/driver"
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

// heartbeat is a heartbeat: the wait's new timeout and its event. The
// new timeout is what it leaves in timeout.
type heartbeat struct {
	key     string
	extend  verbs.Duration
	timeout time.Time
}

func (c *heartbeat) apply(t *transition) error {
	var inv *driver.Invocation
	for _, i := range t.invocations {
		if i.CorrelationKey == c.key {
			inv = i
		}
	}
	if inv == nil {
		return fmt.Errorf("%w: the wait on correlation key %q has ended", ErrConflict, c.key)
	}
	step := t.byID[inv.StepID]
	if step == nil {
		return fmt.Errorf("%w: the step waiting on %q is not in its runbook", ErrNotFound, c.key)
	}
	exec := t.execution(step)
	maxPark := exec.Timeouts.MaxParkOrDefault()
	timeout, clamped := t.now.Add(c.extend.D), false
	if limit := inv.ParkedAt.Add(maxPark); maxPark > 0 && timeout.After(limit) {
		timeout, clamped = limit, true
	}
	if timeout.Before(inv.TimeoutAt) {
		timeout = inv.TimeoutAt // a heartbeat never brings a timeout closer
	}
	inv.TimeoutAt, c.timeout = timeout, timeout
	t.invocationUpdates = append(t.invocationUpdates, driver.InvocationUpdate{ID: inv.InvocationID, TimeoutAt: &timeout})
	t.event(rbtype.EventStepHeartbeat, step, StepHeartbeatData{
		CorrelationKey: c.key, Extend: c.extend.ISO, TimeoutAt: timeout, Clamped: clamped,
	})
	return nil
}
