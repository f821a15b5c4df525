package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

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

// Heartbeat records that the external work a parked step waits for goes
// on: the wait's timeout moves to now + extend (an ISO 8601 duration),
// never back and never past parked_at + the verb's timeouts.max_park
// (SEMANTICS.md section 8). It is not the completion: the key may still
// complete or fail later. It returns the new timeout.
func (e *Engine) Heartbeat(ctx context.Context, correlationKey, extend string) (time.Time, error) {
	if extend == "" {
		return time.Time{}, fmt.Errorf("%w: a heartbeat needs \"extend\", an ISO 8601 duration such as P3D", ErrInvalid)
	}
	ext, err := verbs.ParseDuration(extend)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: extend: %v", ErrInvalid, err)
	}
	if target, err := e.store.WaitTarget(ctx, correlationKey); err == nil && !sees(ctx, target.Tenant) {
		return time.Time{}, noWait(correlationKey)
	}
	inv, err := e.store.Invocation(ctx, correlationKey)
	if errors.Is(err, driver.ErrNotFound) {
		return time.Time{}, fmt.Errorf("%w: no step waits on correlation key %q", ErrNotFound, correlationKey)
	}
	if err != nil {
		return time.Time{}, err
	}
	var at time.Time
	err = e.locked(ctx, inv.RunbookID, func(tx driver.Tx, rb *driver.Runbook, steps []*driver.Step) error {
		active, err := tx.ActiveInvocations(ctx, []uuid.UUID{rb.ID})
		if err != nil {
			return err
		}
		plan, err := e.planOf(rb)
		if err != nil {
			return err
		}
		c, timeout, err := heartbeat(time.Now(), e.workerID, rb, plan, steps, active, correlationKey, ext)
		if err != nil {
			return err
		}
		at = timeout
		return tx.ApplyChange(ctx, c)
	})
	return at, err
}

// heartbeat is the change a heartbeat makes: the wait's new timeout and
// its event.
func heartbeat(now time.Time, worker string, rb *driver.Runbook, plan *planInfo, steps []*driver.Step, active []driver.Invocation, key string, extend verbs.Duration) (driver.Change, time.Time, error) {
	var inv *driver.Invocation
	for i := range active {
		if active[i].CorrelationKey == key {
			inv = &active[i]
		}
	}
	if inv == nil {
		return driver.Change{}, time.Time{}, fmt.Errorf("%w: the wait on correlation key %q has ended", ErrConflict, key)
	}
	var step *driver.Step
	for _, s := range steps {
		if s.ID == inv.StepID {
			step = s
		}
	}
	if step == nil {
		return driver.Change{}, time.Time{}, fmt.Errorf("%w: the step waiting on %q is not in its runbook", ErrNotFound, key)
	}
	var maxPark time.Duration
	if ps, ok := plan.steps[step.Key]; ok {
		maxPark = ps.Execution.Timeouts.MaxParkOrDefault()
	}
	timeout, clamped := now.Add(extend.D), false
	if limit := inv.ParkedAt.Add(maxPark); maxPark > 0 && timeout.After(limit) {
		timeout, clamped = limit, true
	}
	if timeout.Before(inv.TimeoutAt) {
		timeout = inv.TimeoutAt // a heartbeat never brings a timeout closer
	}
	ev, err := newEvent(rb.ID, rbtype.EventStepHeartbeat, worker, step, StepHeartbeatData{
		CorrelationKey: key, Extend: extend.ISO, TimeoutAt: timeout, Clamped: clamped,
	})
	if err != nil {
		return driver.Change{}, time.Time{}, err
	}
	return driver.Change{
		RunbookID:   rb.ID,
		Invocations: []driver.InvocationUpdate{{ID: inv.InvocationID, TimeoutAt: &timeout}},
		Events:      []driver.Event{ev},
	}, timeout, nil
}
