package runtime

import (
	"context"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Decide records a person's decision on a gate: an approval lets the step
// run; a rejection fails it with POLICY_DENIED. A token decides only the
// gates of steps at or below its max_risk (docs/design/semantics.md
// section 10): a high-risk step's gate takes a token allowed high, or an
// admin; ErrForbidden otherwise.
func (e *Engine) Decide(ctx context.Context, runbookID uuid.UUID, stepKey string, approve bool, by, comment string) error {
	by, note := actorOf(ctx, by)
	ceiling := rbtype.RiskHigh
	if s, ok := scopeOf(ctx); ok {
		ceiling = s.maxRisk()
	}
	return e.runCommand(ctx, runbookID, &machine.DecideGate{Step: stepKey, Approve: approve, By: by, Note: note, Comment: comment, Ceiling: ceiling})
}
