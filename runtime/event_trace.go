package runtime

import (
	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
)

// EventTrace is the trace context of a runbook's events, which the API
// shows on each (docs/design/semantics.md section 2): every event carries the
// runbook's trace id and correlation id, and a step's event its attempt's
// id and span id.
type EventTrace struct {
	RunbookID     uuid.UUID
	TraceID       string
	CorrelationID string
}

// Attempt is the attempt id and span id (hex) of a step's attempt.
func (t EventTrace) Attempt(step string, attempt int) (uuid.UUID, string) {
	id := machine.AttemptID(t.RunbookID, step, attempt)
	return id, machine.AttemptSpanID(id).String()
}

// EventTraceOf is the trace of a runbook's events, from its state.
func EventTraceOf(id uuid.UUID, st driver.RunbookState) EventTrace {
	return EventTrace{RunbookID: id, TraceID: machine.TraceIDOf(id, st.TraceID).String(), CorrelationID: machine.CorrelationIDOf(id, st.CorrelationID)}
}
