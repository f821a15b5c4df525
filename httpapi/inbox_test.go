package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

// TestListingByStateAndNeedForAPerson: the listing's filters pick the
// runbooks whose views say so, for one runbook of each kind: a gate to
// decide, a park, a failure a retry may fix, one it would only repeat, a
// rejected gate, an escalation and a complete one (docs/daemon.md: inbox).
func TestListingByStateAndNeedForAPerson(t *testing.T) {
	b := setup(t)
	submit := func(src string, inputs map[string]any) string {
		t.Helper()
		sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: src, Inputs: inputs})
		require.NoError(t, err)
		return sub.ID.String()
	}
	gated := submit("(t.echo :v $who :as @first)\n(t.approve :v @first.v :as @sign)\n", map[string]any{"who": "ada"})
	parked := submit("(t.wait :as @w)\n", nil)
	down := submit("(t.down :as @call)\n", nil)
	badArgs := submit("(t.count :as @c)\n(t.echo :v @c.count :as @use)\n", nil)
	rejected := submit("(t.approve :v \"no\" :as @sign)\n", nil)
	escalated := submit("(t.hurry :as @slow)\n", nil)
	complete := submit("(t.echo :v \"done\")\n", nil)

	b.waitFor(t, gated, "awaiting approval", stateIs("awaiting_approval"))
	b.waitFor(t, parked, "parked", stateIs("parked"))
	b.waitFor(t, rejected, "awaiting approval", stateIs("awaiting_approval"))
	_, err := b.client.Reject(b.ctx, rejected, "sign", apitype.DecisionRequest{By: "ops", Comment: "not today"})
	require.NoError(t, err)
	finished := func(v *apitype.RunbookView) bool { return v.FinishedAt != nil }
	for _, id := range []string{down, badArgs, rejected, escalated, complete} {
		b.waitFor(t, id, "finished", finished)
	}

	// What each view says, which the listing must agree with.
	views := map[string]*apitype.RunbookView{}
	for _, id := range []string{gated, parked, down, badArgs, rejected, escalated, complete} {
		v, err := b.client.Get(b.ctx, id)
		require.NoError(t, err)
		views[id] = v
	}
	needs := func(id string) bool { return needsPerson(views[id].NextActions) }
	require.True(t, needs(gated), "a gate waits on a person")
	require.False(t, needs(parked), "a notification is the outside world's to send")
	require.True(t, needs(down), "a retry may fix an unavailable dependency")
	require.False(t, needs(badArgs), "a retry would send the same arguments, which do not fit")
	require.True(t, needs(rejected), "a retry asks a rejected gate again")
	require.True(t, needs(escalated), "an escalation waits for a resolution")
	require.False(t, needs(complete))
	require.Equal(t, rbtype.CodeSchemaValidationFailed, views[badArgs].Failures[0].Code)
	require.Empty(t, views[badArgs].NextActions, "no retry is offered for a failure a retry would repeat")
	for _, id := range []string{down, badArgs, rejected, complete} {
		require.Empty(t, views[id].BlockedOn, "a finished runbook is blocked on nothing")
	}
	require.Equal(t, "slow", views[escalated].BlockedOn[0].Step, "an escalated runbook waits for its resolution")

	list := func(q client.ListRequest) []string {
		t.Helper()
		q.Limit = 100
		page, err := b.client.List(b.ctx, q)
		require.NoError(t, err)
		var out []string
		for _, r := range page.Runbooks {
			if views[r.ID.String()] != nil {
				out = append(out, r.ID.String())
				require.Equal(t, views[r.ID.String()].State, r.State, "a summary's state is its view's")
				require.Equal(t, needs(r.ID.String()), r.NeedsPerson)
			}
		}
		return out
	}
	yes, no := true, false
	var person, others []string
	for id := range views {
		if needs(id) {
			person = append(person, id)
		} else {
			others = append(others, id)
		}
	}
	require.ElementsMatch(t, person, list(client.ListRequest{NeedsPerson: &yes}))
	require.ElementsMatch(t, others, list(client.ListRequest{NeedsPerson: &no}))
	for _, state := range []string{"awaiting_approval", "parked", "executing", "failed", "escalated", "complete"} {
		var want []string
		for id, v := range views {
			if string(v.State) == state {
				want = append(want, id)
			}
		}
		require.ElementsMatch(t, want, list(client.ListRequest{State: state}), "state %s", state)
	}
	require.ElementsMatch(t, []string{down, rejected}, list(client.ListRequest{Status: rbtype.RunbookFailed, NeedsPerson: &yes}))
	require.Empty(t, list(client.ListRequest{Status: rbtype.RunbookComplete, State: "failed"}))

	// Every summary says what it waits on, and carries its name.
	page, err := b.client.List(b.ctx, client.ListRequest{State: "awaiting_approval"})
	require.NoError(t, err)
	i := slices.IndexFunc(page.Runbooks, func(r apitype.RunbookSummary) bool { return r.ID.String() == gated })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, "submitted", page.Runbooks[i].Name, "named after the default filename")
	require.Equal(t, "sign", page.Runbooks[i].BlockedOn[0].Step)
	require.Nil(t, page.Runbooks[i].BlockedOn[0].Gate, "a listing leaves a gate's details to the runbook's view")

	status, out := b.raw(t, "GET", "/v1/runbooks?state=sleepy", "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, out, `state \"sleepy\" is not one of`)
	status, out = b.raw(t, "GET", "/v1/runbooks?needs_person=maybe", "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, out, `needs_person \"maybe\" must be true or false`)
}

// TestStepDetail: one step's arguments as frozen and as resolved, its
// effect, and its gate and why, before it runs and after.
func TestStepDetail(t *testing.T) {
	b := setup(t)
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{
		Source: "(t.echo :v $who :as @first)\n(t.wire :amount 100 :to @first.v :as @pay)\n", Filename: "pay.rbk",
		Inputs: map[string]any{"who": "ada"}, Name: "pay ada",
	})
	require.NoError(t, err)
	id := sub.ID.String()
	require.Equal(t, "pay ada", sub.Name)
	v := b.waitFor(t, id, "awaiting approval", stateIs("awaiting_approval"))
	require.Equal(t, "pay ada", v.Name)
	g := v.BlockedOn[0].Gate
	require.Equal(t, apitype.GateRisk, g.Why, "a high-risk verb's gate")
	require.Equal(t, rbtype.RiskHigh, g.Risk)
	require.Equal(t, "bank.example/v1/wires", g.Target)
	require.Equal(t, map[string]any{"amount": json.Number("100"), "to": "ada"}, normalize(t, g.Args))

	d, err := b.client.Step(b.ctx, id, "pay")
	require.NoError(t, err)
	require.Equal(t, rbtype.StepWaitingApproval, d.Status)
	require.Equal(t, apitype.ArgsFromResolved, d.ArgsFrom)
	require.JSONEq(t, `{"amount": 100, "to": "ada"}`, string(d.ResolvedArgs))
	require.Equal(t, map[string]any{"$ref": "first.v"}, d.Args["to"], "the plan's arguments, as frozen")
	require.Contains(t, string(d.Execution), `"gate":"human_confirm"`, "a high-risk verb's frozen block says the gate that applies")
	require.Equal(t, apitype.GateRisk, d.GateWhy)
	require.Equal(t, "pay", d.GatedBy)
	require.Equal(t, rbtype.SideEffectsExternalCall, d.SideEffects)

	first, err := b.client.Step(b.ctx, id, "first")
	require.NoError(t, err)
	require.Equal(t, apitype.ArgsFromAttempt, first.ArgsFrom)
	require.JSONEq(t, `{"v": "ada"}`, string(first.ResolvedArgs))
	require.Empty(t, first.GateWhy)

	_, err = b.client.Step(b.ctx, id, "pya")
	requireAPIError(t, err, http.StatusNotFound, httpapi.CodeNotFound, `has no step "pya" (did you mean "pay"?)`)
	status, _ := b.raw(t, "GET", "/v1/runbooks/not-a-uuid/steps/pay", "")
	require.Equal(t, http.StatusBadRequest, status)
}

// needsPerson is runtime.NeedsPerson, over the client's actions.
func needsPerson(actions []apitype.ActionView) bool {
	for _, a := range actions {
		switch a.Kind {
		case apitype.ActionApprove, apitype.ActionResolve, apitype.ActionRetry:
			return true
		}
	}
	return false
}

// normalize round-trips a value through JSON with numbers kept exact.
func normalize(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	require.NoError(t, dec.Decode(&out))
	return out
}
