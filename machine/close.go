package machine

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

// CloseRunbook is a close: the runbook executing, its event and mutation;
// the same round settles it if its steps have all ended.
type CloseRunbook struct{ By, Note string }

func (c *CloseRunbook) apply(t *transition) error {
	if t.Rb.Status != rbtype.RunbookInProgress {
		return fmt.Errorf("%w: runbook %s is %s, not held open; only an in_progress runbook can be closed", rbtype.ErrConflict, t.Rb.ID, t.Rb.Status)
	}
	t.mutate(rbtype.EventRunbookClosed, rbtype.MutationClose, c.By, nil, RunbookClosedData{By: c.By, Note: c.Note})
	status := rbtype.RunbookExecuting
	t.runbookChange().Status = &status
	t.moveRunbook(status)
	return nil
}
