package machine

import (
	"fmt"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// DecideGate is a gate's decision: the step ready to run (it starts in the
// same round), or failed with POLICY_DENIED, which the runbook follows
// under the step's failure mode as any failure.
type DecideGate struct {
	Step     string
	Approve  bool
	By, Note string
	Comment  string
	// Ceiling is the riskiest step whose gate the decider may decide;
	// empty for any.
	Ceiling rbtype.Risk
	// Groups are the decider's token's groups, and AnyGroup says it may
	// decide whatever group a step's approvers name (an admin): see
	// decider.go.
	Groups   []string
	AnyGroup bool
}

func (c *DecideGate) apply(t *transition) error {
	s, err := t.stepByKey(c.Step)
	if err != nil {
		return err
	}
	if s.Status != rbtype.StepWaitingApproval {
		return fmt.Errorf("%w: step %q is %s, not waiting for approval", rbtype.ErrConflict, c.Step, s.Status)
	}
	if why := t.plan.DecideRefusal(s, Decider{Ceiling: c.Ceiling, Groups: c.Groups, AnyGroup: c.AnyGroup}); why != "" {
		return fmt.Errorf("%w: %s", rbtype.ErrForbidden, why)
	}
	s.GateDecidedBy, s.GateDecidedAt, s.GateComment = c.By, &t.Now, c.Comment
	t.touch(s)
	decided := GateDecidedData{By: c.By, Comment: c.Comment, Note: c.Note}
	if c.Approve {
		s.GateDecision = rbtype.GateApproved
		t.moveStep(s, rbtype.StepReady)
		t.event(rbtype.EventGateApproved, s, decided)
		t.countTrust(s, true, "approved by "+c.By)
		return nil
	}
	s.GateDecision = rbtype.GateRejected
	t.event(rbtype.EventGateRejected, s, decided)
	t.countTrust(s, false, "rejected by "+c.By)
	t.failStep(s, handler.Errorf(rbtype.CodePolicyDenied, "rejected by %s", c.By))
	return nil
}
