package machine

import (
	"fmt"
	"strings"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
)

// budgetAdvice is what a step a spent budget stopped tells the person, as
// commands that are accepted once the budget is raised
// (docs/design/semantics.md section 15, "Offered means accepted"): the
// command that raises it, then a retry of the step; or, when the
// failure will fail the runbook and undo steps it completed (their
// compensations), which a retry refuses (retry.go), a new generation.
func (t *transition) budgetAdvice(s *rbtype.Step, scope rbtype.BudgetScope) string {
	raise := fmt.Sprintf("raise the budget (rbd budget set --tenant %s --%s AMOUNT)", t.Rb.Tenant, scope)
	if t.plan.onFailure(s.Key) != rbtype.OnFailureContinue && t.willCompensate() {
		return fmt.Sprintf("%s, then start it again as a new generation (rbd regenerate %s): the steps it completed are undone, so it cannot be retried", raise, t.Rb.ID)
	}
	return fmt.Sprintf("%s, then retry the step (rbd retry %s --step %s)", raise, t.Rb.ID, quoteKey(s.Key))
}

// willCompensate reports whether a failure of the runbook now would undo
// a step: one whose verb declares a compensation has completed, or may
// yet complete (it is under way), as scheduleCompensations finds them.
func (t *transition) willCompensate() bool {
	for _, ps := range t.plan.Plan.Steps {
		if ps.Execution.Compensation == nil || ps.Loop != "" || ps.Kind == compiler.KindHook {
			continue
		}
		s := t.byKey[ps.Key]
		if s == nil || s.Simulated {
			continue
		}
		switch s.Status {
		case rbtype.StepComplete, rbtype.StepRunning, rbtype.StepParked:
			return true
		}
	}
	return false
}

// quoteKey quotes a step key for a shell when it needs it (an instance
// of a for-each holds brackets).
func quoteKey(key string) string {
	if strings.ContainsAny(key, "#'\"\\ $`*?[]{}()<>|&;!~") {
		return "'" + strings.ReplaceAll(key, "'", `'\''`) + "'"
	}
	return key
}
