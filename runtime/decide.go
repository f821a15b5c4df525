package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// Decide records a person's decision on a gate: an approval lets the step
// run; a rejection fails it with POLICY_DENIED.
func (e *Engine) Decide(ctx context.Context, runbookID uuid.UUID, stepKey string, approve bool, by, comment string) error {
	by, note := actorOf(ctx, by)
	return e.locked(ctx, runbookID, func(tx driver.Tx, rb *driver.Runbook, steps []*driver.Step) error {
		c, err := decideGate(time.Now(), e.workerID, runbookID, steps, stepKey, approve, by, note, comment)
		if err != nil {
			return err
		}
		return tx.ApplyChange(ctx, c)
	})
}

// decideGate is the change a gate's decision makes: the step ready to run,
// or failed with POLICY_DENIED, its events, and a wake-up.
func decideGate(now time.Time, worker string, runbookID uuid.UUID, steps []*driver.Step, stepKey string, approve bool, by, note, comment string) (driver.Change, error) {
	var s *driver.Step
	for _, st := range steps {
		if st.Key == stepKey {
			s = st
		}
	}
	if s == nil {
		return driver.Change{}, noStep(runbookID, stepKey, steps)
	}
	if s.Status != rbtype.StepWaitingApproval {
		return driver.Change{}, fmt.Errorf("%w: step %q is %s, not waiting for approval", ErrConflict, stepKey, s.Status)
	}
	s.GateDecidedBy, s.GateDecidedAt, s.GateComment = by, &now, comment
	decided := GateDecidedData{By: by, Comment: comment, Note: note}
	var events []driver.Event
	add := func(typ rbtype.EventType, data any) error {
		ev, err := newEvent(runbookID, typ, worker, s, data)
		events = append(events, ev)
		return err
	}
	if approve {
		s.GateDecision, s.Status = rbtype.GateApproved, rbtype.StepReady
		if err := add(rbtype.EventGateApproved, decided); err != nil {
			return driver.Change{}, err
		}
	} else {
		s.GateDecision, s.Status, s.FinishedAt = rbtype.GateRejected, rbtype.StepFailed, &now
		s.ErrorCode, s.ErrorMessage = rbtype.CodePolicyDenied, "rejected by "+by
		if err := add(rbtype.EventGateRejected, decided); err != nil {
			return driver.Change{}, err
		}
		if err := add(rbtype.EventStepFailed, StepFailedData{Code: rbtype.CodePolicyDenied, Message: s.ErrorMessage}); err != nil {
			return driver.Change{}, err
		}
	}
	return driver.Change{RunbookID: runbookID, Steps: []driver.StepChange{s.Change()}, Events: events, Wake: true}, nil
}
