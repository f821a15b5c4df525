package runtime

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// Decide records a person's decision on a gate: an approval lets the step
// run; a rejection fails it with POLICY_DENIED.
func (e *Engine) Decide(ctx context.Context, runbookID uuid.UUID, stepKey string, approve bool, by, comment string) error {
	by, note := actorOf(ctx, by)
	return e.runCommand(ctx, runbookID, &decideGate{step: stepKey, approve: approve, by: by, note: note, comment: comment})
}

// decideGate is a gate's decision: the step ready to run (it starts in the
// same round), or failed with POLICY_DENIED, which the runbook follows
// under the step's failure mode as any failure.
type decideGate struct {
	step     string
	approve  bool
	by, note string
	comment  string
}

func (c *decideGate) apply(t *transition) error {
	s, err := t.stepByKey(c.step)
	if err != nil {
		return err
	}
	if s.Status != rbtype.StepWaitingApproval {
		return fmt.Errorf("%w: step %q is %s, not waiting for approval", ErrConflict, c.step, s.Status)
	}
	s.GateDecidedBy, s.GateDecidedAt, s.GateComment = c.by, &t.now, c.comment
	t.touch(s)
	decided := GateDecidedData{By: c.by, Comment: c.comment, Note: c.note}
	if c.approve {
		s.GateDecision, s.Status = rbtype.GateApproved, rbtype.StepReady
		t.event(rbtype.EventGateApproved, s, decided)
		return nil
	}
	s.GateDecision = rbtype.GateRejected
	t.event(rbtype.EventGateRejected, s, decided)
	t.failStep(s, Errorf(rbtype.CodePolicyDenied, "rejected by %s", c.by))
	return nil
}
