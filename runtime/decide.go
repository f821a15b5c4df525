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
// admin; ErrForbidden otherwise. A step that names :approvers (or whose
// verb names execution.approvers) is decided only by a token of that group
// or an admin (docs/design/language.md v1.4); ErrForbidden, naming the
// group, otherwise. A call with no token in ctx (the daemon's own) may
// decide any.
func (e *Engine) Decide(ctx context.Context, runbookID uuid.UUID, stepKey string, approve bool, by, comment string) error {
	by, note := actorOf(ctx, by)
	ceiling, groups, anyGroup := rbtype.RiskHigh, []string(nil), true
	if s, ok := scopeOf(ctx); ok {
		ceiling, groups, anyGroup = s.maxRisk(), s.Groups, s.All
	}
	return e.runCommand(ctx, runbookID, &machine.DecideGate{Step: stepKey, Approve: approve, By: by, Note: note, Comment: comment, Ceiling: ceiling,
		Groups: groups, AnyGroup: anyGroup})
}
