package runtime

import (
	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// logged is the event and the mutation row that together record a change
// someone made to a runbook (an extension, a retry, a close, a
// resolution). Both carry the same data, encoded once: the mutation's
// payload is the event's data ({} when that is empty, as the store writes
// an empty payload).
func logged(runbookID uuid.UUID, typ rbtype.EventType, kind rbtype.MutationKind, worker, actor string, step *driver.Step, data any) (driver.Event, driver.Mutation, error) {
	ev, err := newEvent(runbookID, typ, worker, step, data)
	if err != nil {
		return driver.Event{}, driver.Mutation{}, err
	}
	return ev, driver.Mutation{RunbookID: runbookID, Actor: actor, Kind: kind, Payload: ev.Data}, nil
}

// reopened is the runbook change that makes a finished runbook run again
// (a retry, a resolution): status as given, its error cleared, finished_at
// cleared.
func reopened(id uuid.UUID, status rbtype.RunbookStatus) *driver.RunbookChange {
	code, msg := rbtype.ErrorCode(""), ""
	return &driver.RunbookChange{ID: id, Status: &status, ErrorCode: &code, ErrorMessage: &msg, Reopen: true}
}
