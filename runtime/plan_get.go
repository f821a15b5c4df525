package runtime

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/runtime/driver"
)

// Plan returns a runbook's frozen plan as it is stored: its steps with
// their arguments and execution blocks, and its edges with their kinds.
// The view (Get) leaves these out because most readers want states, not
// the graph; the console draws the graph from this.
func (e *Engine) Plan(ctx context.Context, id uuid.UUID) (json.RawMessage, error) {
	rb, err := e.store.Runbook(ctx, id)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, e.noRunbook(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	if err := e.visible(ctx, rb); err != nil {
		return nil, err
	}
	return rb.Plan, nil
}
