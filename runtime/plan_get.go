package runtime

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
)

// Plan returns a runbook's frozen plan as it is stored: its steps with
// their arguments and execution blocks, and its edges with their kinds.
// The view (Get) leaves these out because most readers want states, not
// the graph; the console draws the graph from this.
func (e *Engine) Plan(ctx context.Context, id uuid.UUID) (json.RawMessage, error) {
	rb, err := e.visibleRunbook(ctx, id)
	if err != nil {
		return nil, err
	}
	return rb.Plan, nil
}
