package runtime_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// Bad values are refused at the door, before anything runs or is stored:
// an input that does not fit the argument it is passed to, and a
// notification whose result does not fit the parked verb's output_schema.
// Each refusal is ErrSchema, and what was refused can be sent again fixed.
func TestBadValuesAreRefusedAtTheDoor(t *testing.T) {
	b := setup(t)
	b.extendCatalogue(t, `
- name: mail
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      to: {type: string, format: email}
`)
	b.run(t)

	// An input that is a string, as the compiler inferred, but not an
	// email, as the argument it feeds requires: refused, no runbook.
	src := []byte(`(t.echo :v "first" :as @first) (t.mail :to $contact :after @first)`)
	_, err := b.engine.SubmitSource(b.ctx, "mail.rbk", src, runtime.Submission{Inputs: map[string]any{"contact": "notanemail"}})
	require.ErrorIs(t, err, rbtype.ErrSchema)
	require.ErrorContains(t, err, `input $contact, passed to t.mail's argument to (step "t.mail#2")`)
	sub, err := b.engine.SubmitSource(b.ctx, "mail.rbk", src, runtime.Submission{Inputs: map[string]any{"contact": "ada@example.com"}})
	require.NoError(t, err)
	b.waitStatus(t, sub.ID, rbtype.RunbookComplete)

	// A result t.wait's output_schema refuses (answer must be a string).
	id := b.submit(t, `(t.wait :as @w) (t.echo :v @w.answer :as @after)`, nil)
	key := correlationKey(t, b, b.waitState(t, id, "parked").ID, "w")
	_, err = b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: json.RawMessage(`{"answer": 42}`)})
	require.ErrorIs(t, err, rbtype.ErrSchema)
	require.ErrorContains(t, err, `the result does not match t.wait's output_schema (step "w" waits on this key)`)
	// Refused again, the same: nothing was stored.
	_, err = b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: json.RawMessage(`{"answer": 42}`)})
	require.ErrorIs(t, err, rbtype.ErrSchema)
	v, err := b.engine.Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.StepParked, step(v, "w").Status, "the step still waits")
	// Fixed, it is accepted, and the runbook goes on.
	res, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: json.RawMessage(`{"answer": "42"}`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)
	v = b.waitStatus(t, id, rbtype.RunbookComplete)
	require.JSONEq(t, `{"v":"42"}`, string(v.Outcomes["after"]))

	// A failure is not a result: it is not checked against the schema.
	id2 := b.submit(t, `(t.wait :as @w2)`, nil)
	key2 := correlationKey(t, b, b.waitState(t, id2, "parked").ID, "w2")
	_, err = b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key2, Status: rbtype.OutcomeFailed, ErrorCode: rbtype.CodePolicyDenied, ErrorMessage: "no"})
	require.NoError(t, err)
}
