package runtime

import (
	"fmt"

	"github.com/runbookdev/runbook/rbtype"
)

// RunbookClosedData is the data of RUNBOOK_CLOSED and the payload of its
// mutation.
type RunbookClosedData struct {
	By   string `json:"by,omitempty"`
	Note string `json:"note,omitempty"`
}

// closeRunbook is a close: the runbook executing, its event and mutation;
// the same round settles it if its steps have all ended.
type closeRunbook struct{ by, note string }

func (c *closeRunbook) apply(t *transition) error {
	if t.rb.Status != rbtype.RunbookInProgress {
		return fmt.Errorf("%w: runbook %s is %s, not held open; only an in_progress runbook can be closed", ErrConflict, t.rb.ID, t.rb.Status)
	}
	t.mutate(rbtype.EventRunbookClosed, rbtype.MutationClose, c.by, nil, RunbookClosedData{By: c.by, Note: c.note})
	status := rbtype.RunbookExecuting
	t.runbookChange().Status = &status
	t.rb.Status = status
	return nil
}
