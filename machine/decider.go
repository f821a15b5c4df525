package machine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
)

// Decider is who asks to decide a gate, as far as the gate's rules care:
// the riskiest step whose gate the token may decide (its max_risk; empty
// for any), its groups, and whether it may decide whatever group a step's
// approvers name (an admin).
type Decider struct {
	Ceiling  rbtype.Risk
	Groups   []string
	AnyGroup bool
}

// DecideRefusal says why d may not decide the gate of step s, or "" when
// it may. It is the one rule both DecideGate applies and the view uses to
// offer an approve only to a token whose approve would be accepted
// (docs/design/semantics.md section 10: a step above the token's max_risk
// takes a token allowed its risk or an admin; docs/design/language.md
// v1.4: a step whose :approvers, or whose verb's execution.approvers,
// names a group takes a token of that group or an admin). The reason
// names the risk or the group, so that the person asking knows whom to
// ask.
func (p *PlanInfo) DecideRefusal(s *rbtype.Step, d Decider) string {
	if risk := p.stepRisk(s.Key); d.Ceiling != "" && !risk.Within(d.Ceiling) {
		return fmt.Sprintf("step %q calls verb %s of risk %s; its gate is decided only by a token with max_risk=%s (or admin), and this one's is %s",
			s.Key, s.Verb, risk, risk, d.Ceiling)
	}
	group := p.approvers(s.Key)
	if group == "" || d.AnyGroup || slices.Contains(d.Groups, group) {
		return ""
	}
	has := "no groups"
	if len(d.Groups) > 0 {
		has = "groups " + strings.Join(d.Groups, ", ")
	}
	return fmt.Sprintf("step %q is decided only by a token of group %q (a token line's groups=%s) or an admin; this token has %s",
		s.Key, group, group, has)
}

// stepRisk is the risk of a step's verb as its plan froze it; high when
// the plan does not say, so that only the most trusted decide it.
func (p *PlanInfo) stepRisk(key string) rbtype.Risk {
	if ps := p.Steps[key]; ps != nil && p.Plan != nil {
		if r := p.Plan.PolicyStep(ps).Risk; r.Rank() > 0 {
			return r
		}
	}
	return rbtype.RiskHigh
}

// approvers is the group whose tokens decide a step's gate (the step's
// :approvers, or its verb's execution.approvers, as the plan froze it);
// "" for any token that may approve.
func (p *PlanInfo) approvers(key string) string {
	if ps := p.Steps[key]; ps != nil {
		return ps.Approvers
	}
	return ""
}
