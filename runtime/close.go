package runtime

import (
	"context"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/machine"
)

// Close lets a runbook held open (submitted with HoldOpen) finish: it
// becomes executing, and ends as its steps have ended or will end
// (docs/design/semantics.md section 8). A runbook that is not held open is a
// conflict.
func (e *Engine) Close(ctx context.Context, runbookID uuid.UUID, by string) error {
	by, note := actorOf(ctx, by)
	return e.runCommand(ctx, runbookID, &machine.CloseRunbook{By: by, Note: note})
}
