package runtime

import (
	"context"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/machine"
)

// Resolve settles an escalated step as a person decided: complete with a
// result, retry, or fail. The steps its escalation skipped run again
// (complete, retry), and the runbook, if the escalation had ended it,
// runs again until it settles anew.
func (e *Engine) Resolve(ctx context.Context, runbookID uuid.UUID, stepKey string, r machine.Resolution) error {
	r.By, r.Note = actorOf(ctx, r.By)
	return e.runCommand(ctx, runbookID, &machine.ResolveStep{Step: stepKey, R: r})
}
