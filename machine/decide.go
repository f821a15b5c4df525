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
	// approvers.go.
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
	if risk := t.stepRisk(s); c.Ceiling != "" && !risk.Within(c.Ceiling) {
		return fmt.Errorf("%w: step %q calls verb %s of risk %s; its gate is decided only by a token with max_risk=%s (or admin), and this one's is %s",
			rbtype.ErrForbidden, c.Step, s.Verb, risk, risk, c.Ceiling)
	}
	if err := c.mayDecide(t, s); err != nil {
		return err
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

// stepRisk is the risk of a step's verb as its plan froze it; high when
// the plan does not say, so that only the most trusted decide it.
func (t *transition) stepRisk(s *rbtype.Step) rbtype.Risk {
	if ps := t.plan.Steps[s.Key]; ps != nil {
		if r := t.plan.Plan.PolicyStep(ps).Risk; r.Rank() > 0 {
			return r
		}
	}
	return rbtype.RiskHigh
}
