package runtime

import (
	"fmt"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// decideGate is a gate's decision: the step ready to run (it starts in the
// same round), or failed with POLICY_DENIED, which the runbook follows
// under the step's failure mode as any failure.
type decideGate struct {
	step     string
	approve  bool
	by, note string
	comment  string
	// ceiling is the riskiest step whose gate the decider may decide;
	// empty for any.
	ceiling rbtype.Risk
}

func (c *decideGate) apply(t *transition) error {
	s, err := t.stepByKey(c.step)
	if err != nil {
		return err
	}
	if s.Status != rbtype.StepWaitingApproval {
		return fmt.Errorf("%w: step %q is %s, not waiting for approval", ErrConflict, c.step, s.Status)
	}
	if risk := t.stepRisk(s); c.ceiling != "" && !risk.Within(c.ceiling) {
		return fmt.Errorf("%w: step %q calls verb %s of risk %s; its gate is decided only by a token with max_risk=%s (or admin), and this one's is %s",
			ErrForbidden, c.step, s.Verb, risk, risk, c.ceiling)
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

// stepRisk is the risk of a step's verb as its plan froze it; high when
// the plan does not say, so that only the most trusted decide it.
func (t *transition) stepRisk(s *driver.Step) rbtype.Risk {
	if ps := t.plan.steps[s.Key]; ps != nil {
		if r := t.plan.plan.PolicyStep(ps).Risk; r.Rank() > 0 {
			return r
		}
	}
	return rbtype.RiskHigh
}
