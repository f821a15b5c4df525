package machine

import (
	"github.com/runbookdev/runbook/rbtype"
)

// Command is an input of the state machine that a person or a program
// gives through the API (a cancel, a gate's decision, a resolve, a retry,
// a close, a heartbeat, an extension, a regeneration), as an outcome is a
// handler's and a timeout is the clock's. Its apply changes one runbook's
// transition in memory, or refuses with an error that abandons the
// transaction; what it changed leaves through the round's one write, with
// whatever else the round does in the same transaction (an approved step
// starts, a failed one settles its runbook). It is sealed: only this
// package's commands (CancelRunbook, DecideGate, ResolveStep, RetryRunbook,
// CloseRunbook, Heartbeat, ExtendRunbook, RecordRegeneration,
// RecordCancelAsk) implement it, so every change a person can make is a
// move the machine checks.
type Command interface {
	apply(t *transition) error
}

// mutate records a command's event and its mutation row, which says who
// changed the runbook and how: the same data in both.
func (t *transition) mutate(typ rbtype.EventType, kind rbtype.MutationKind, actor string, s *rbtype.Step, data any) {
	ev, err := NewEvent(t.Rb.ID, typ, t.m.Worker, s, data)
	if err != nil && t.err == nil {
		t.err = err
	}
	t.events = append(t.events, ev)
	t.mutations = append(t.mutations, rbtype.Mutation{RunbookID: t.Rb.ID, Actor: actor, Kind: kind, Payload: ev.Data})
}

// reopen makes a finished runbook run again (a retry, a resolution), as
// status, its error cleared.
func (t *transition) reopen(status rbtype.RunbookStatus) {
	c := t.runbookChange()
	code, msg := rbtype.ErrorCode(""), ""
	c.Status, c.ErrorCode, c.ErrorMessage, c.Reopen, c.Finished = &status, &code, &msg, true, false
	t.moveRunbook(status)
	t.Rb.ErrorCode, t.Rb.ErrorMessage, t.Rb.FinishedAt = "", "", nil
}

// stepByKey finds a step of the runbook by key, or says it has none, with
// the keys it does have to choose from.
func (t *transition) stepByKey(key string) (*rbtype.Step, error) {
	if s := t.byKey[key]; s != nil {
		return s, nil
	}
	return nil, NoStep(t.Rb.ID, key, t.Steps)
}
