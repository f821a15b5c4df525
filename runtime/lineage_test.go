package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
)

// drafter is a model-like handler: its draft follows from the seed it is
// handed, and it records the seed and key of every call.
type drafter struct {
	mu    sync.Mutex
	calls []handler.Call
}

func (d *drafter) draft(_ context.Context, c *handler.Call) (handler.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, handler.Call{RunbookID: c.RunbookID, StepKey: c.StepKey, Attempt: c.Attempt, IdempotencyKey: c.IdempotencyKey, Seed: c.Seed})
	return handler.Complete(map[string]any{"text": fmt.Sprintf("Dear %v, draft %x", c.Args["to"], c.Seed)}), nil
}

func (d *drafter) of(id uuid.UUID) []handler.Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []handler.Call
	for _, c := range d.calls {
		if c.RunbookID == id {
			out = append(out, c)
		}
	}
	return out
}

// The acceptance test: regenerate a completed outreach-like runbook; the
// draft runs again with a new key and seed, and the send, whose body is
// the new draft, returns the parent's receipt: the provider's send count
// stays 1. The lineage is stored and shown, and a repeat of the request
// returns the same regeneration.
func TestRegenerateRedraftsButNeverResends(t *testing.T) {
	b := setup(t)
	svc := &effects{byKey: map[string]int{}}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	d := &drafter{}
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.draft", Kind: rbtype.KindSync}, handler.HandlerFunc(d.draft)))
	b.extendCatalogue(t, fmt.Sprintf(`
- name: draft
  domain: t
  execution: {kind: sync, handler: test.draft, side_effects: none, determinism: stable}
  input_schema: {properties: {to: {type: string}}}
  output_schema: {properties: {text: {type: string}}}
- name: send
  domain: t
  execution:
    kind: sync
    handler: http.call
    params: {url: %q, method: POST}
    side_effects: external_call
    determinism: stable
  input_schema: {properties: {to: {type: string}, body: {type: string}}}
`, srv.URL))
	b.run(t)
	root := b.submit(t, `(t.draft :to $to :as @draft) (t.send :to $to :body @draft.text :as @send)`, map[string]any{"to": "ada"})
	rv := b.waitStatus(t, root, rbtype.RunbookComplete)
	require.Equal(t, apitype.LineageView{Root: root}, rv.Lineage, "an original is its own root")
	require.Equal(t, 1, svc.requests)

	sub, err := b.engine.Regenerate(b.ctx, root, runtime.Regeneration{Actor: "ops"})
	require.NoError(t, err)
	require.True(t, sub.Created)
	require.Equal(t, apitype.LineageView{Root: root, Parent: &root, Generation: 1}, sub.Lineage)
	child := sub.ID
	cv := b.waitStatus(t, child, rbtype.RunbookComplete)
	require.Equal(t, sub.Lineage, cv.Lineage)

	// The draft ran again, under a new key and a new seed: a new draft.
	first, again := d.of(root), d.of(child)
	require.Len(t, first, 1)
	require.Len(t, again, 1)
	require.NotEqual(t, first[0].IdempotencyKey, again[0].IdempotencyKey)
	require.NotEqual(t, first[0].Seed, again[0].Seed)
	require.NotEqual(t, rv.Outcomes["draft"], cv.Outcomes["draft"])
	// The send did not: the root's receipt is its result, though its
	// body would now be another draft.
	require.Equal(t, 1, svc.requests, "the provider was not called again")
	require.Len(t, svc.byKey, 1)
	require.JSONEq(t, string(rv.Outcomes["send"]), string(cv.Outcomes["send"]))

	// Both ledgers say what happened; the parent's mutation log says who.
	require.Contains(t, b.eventTypes(t, root), "RUNBOOK_REGENERATED")
	childEvents, err := b.engine.Events(b.ctx, child, 0, 0)
	require.NoError(t, err)
	var regen machine.RunbookRegeneratedData
	for _, e := range childEvents {
		if e.Type == rbtype.EventRunbookRegenerated {
			require.NoError(t, json.Unmarshal(e.Data, &regen))
		}
	}
	require.Equal(t, machine.RunbookRegeneratedData{Root: &root, Parent: &root, Generation: 1, By: "ops"}, regen)

	// A repeat of the request returns the same regeneration.
	again2, err := b.engine.Regenerate(b.ctx, root, runtime.Regeneration{Actor: "ops"})
	require.NoError(t, err)
	require.False(t, again2.Created)
	require.Equal(t, child, again2.ID)

	// A regeneration of the regeneration is generation 2 of the same
	// root; with another input, the draft is for someone else, and the
	// send still keeps the key it inherited.
	sub2, err := b.engine.Regenerate(b.ctx, child, runtime.Regeneration{Inputs: map[string]any{"to": "grace"}, Actor: "ops"})
	require.NoError(t, err)
	require.Equal(t, apitype.LineageView{Root: root, Parent: &child, Generation: 2}, sub2.Lineage)
	gv := b.waitStatus(t, sub2.ID, rbtype.RunbookComplete)
	require.Contains(t, string(gv.Outcomes["draft"]), "Dear grace")
	require.Equal(t, 1, svc.requests)
	require.JSONEq(t, `{"to":"grace"}`, string(gv.Inputs))

	// Nothing regenerates from a running runbook, an unknown one, or with
	// inputs the plan does not take.
	running := b.submit(t, `(t.wait :as @w)`, nil)
	_, err = b.engine.Regenerate(b.ctx, running, runtime.Regeneration{})
	require.ErrorIs(t, err, rbtype.ErrConflict)
	_, err = b.engine.Regenerate(b.ctx, uuid.New(), runtime.Regeneration{})
	require.ErrorIs(t, err, rbtype.ErrNotFound)
	_, err = b.engine.Regenerate(b.ctx, root, runtime.Regeneration{Inputs: map[string]any{"nope": 1}})
	require.ErrorIs(t, err, rbtype.ErrInvalid)
}

// A retry keeps the seed of each attempt: a replay of attempt n is handed
// what attempt n was.
func TestRetryHandsTheSameSeedsAgain(t *testing.T) {
	b := setup(t)
	d := &drafter{}
	fails := 2
	var mu sync.Mutex
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.draft", Kind: rbtype.KindSync}, handler.HandlerFunc(
		func(ctx context.Context, c *handler.Call) (handler.Result, error) {
			_, _ = d.draft(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			if fails > 0 {
				fails--
				return handler.Result{}, handler.Errorf(rbtype.CodeTemporaryProviderError, "busy")
			}
			return handler.Complete(map[string]any{"ok": true}), nil
		})))
	b.extendCatalogue(t, `
- name: draft
  domain: t
  execution:
    kind: sync
    handler: test.draft
    side_effects: none
    retry: {max_attempts: 1, backoff: fixed, base_delay: PT0.01S, max_delay: PT0.01S}
`)
	b.run(t)
	id := b.submit(t, `(t.draft :to "ada" :as @draft)`, nil)
	b.waitStatus(t, id, rbtype.RunbookFailed)
	_, err := b.engine.Retry(b.ctx, id, machine.RetryOptions{By: "test"})
	require.NoError(t, err)
	b.waitStatus(t, id, rbtype.RunbookFailed)
	_, err = b.engine.Retry(b.ctx, id, machine.RetryOptions{By: "test"})
	require.NoError(t, err)
	b.waitStatus(t, id, rbtype.RunbookComplete)

	calls := d.of(id)
	require.Len(t, calls, 3)
	seeds := map[uint64]int{}
	for i, c := range calls {
		require.Equal(t, i+1, c.Attempt)
		require.Equal(t, calls[0].IdempotencyKey, c.IdempotencyKey, "a retry keeps the key")
		seeds[c.Seed]++
	}
	require.Len(t, seeds, 3, "each attempt has its own seed")
}

// An escalating wait whose verb names an escalation pages once: the
// escalation verb runs with the step's arguments, its events are in the
// ledger, and the runbook finishes only after it returned; resolved, the
// step lets its dependents run.
func TestEscalationPagesThenResolveCompletes(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.wait-and-page :case "kyc-42" :as @w) (t.echo :after @w :as @n)`, nil)
	v := b.waitFor(t, id, "escalated and paged", func(v *apitype.RunbookView) bool {
		return v.Status == rbtype.RunbookEscalated && v.FinishedAt != nil
	})
	require.Equal(t, &apitype.Compensation{Status: rbtype.CompensationComplete}, step(v, "w").Escalation)
	require.Equal(t, 1, b.rec.callsOf(id, "w"), "one page")
	types := b.eventTypes(t, id)
	require.Subset(t, types, []string{"STEP_TIMED_OUT w", "ESCALATION_STARTED w", "ESCALATION_SUCCEEDED w", "RUNBOOK_ESCALATED"})
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	for _, e := range events {
		if e.Type == rbtype.EventEscalationStarted {
			require.JSONEq(t, `{"verb":"t.page","on_behalf_of":"test"}`, string(e.Data), "paged on behalf of the submitter")
		}
	}

	require.NoError(t, b.engine.Resolve(b.ctx, id, "w", machine.Resolution{Action: machine.ResolveComplete, By: "ops"}))
	v = b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, rbtype.StepComplete, step(v, "n").Status)
	require.Equal(t, 1, b.rec.callsOf(id, "w"), "resolving does not page again")
}
