package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// What the model check (modelcheck_test.go) found where cancel, budgets,
// compensations and escalation meet: each case here failed before its
// fix.

// A call out when its runbook is cancelled still spends what its provider
// charged: the late answer is recorded (its attempt cancelled) and
// counted against the budgets, and its reservation ends with it.
func TestMachineLateOutcomeOfACancelledStepIsSpent(t *testing.T) {
	f := newFixture(t, `(m.remind :to "a" :as @a)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 1}}\n")
	_, calls := f.advance()
	require.Len(t, calls, 1)
	_, _, err := f.command(&machine.CancelRunbook{By: "ops"})
	require.NoError(t, err)
	require.Equal(t, rbtype.StepCancelled, f.step("a").Status)
	require.InDelta(t, 0.07, f.rb.Spent.CostUSD, 1e-9, "reserved while its call is out")

	w, _ := f.advance(costing(calls[0], map[string]any{}, 0.09))
	require.Equal(t, rbtype.StepCancelled, f.step("a").Status, "its result is not used")
	require.Len(t, w.Attempts, 1)
	require.Equal(t, machine.AttemptCancelled, w.Attempts[0].Outcome)
	require.InDelta(t, 0.09, f.rb.Spent.CostUSD, 1e-9, "what it spent, and its reservation given back")
	require.InDelta(t, 0.09, f.budgets[DefaultTenant].Day.CostUSD, 1e-9, "the tenant's day counts it too")
}

// A cancelled step's call whose worker died gives its reservation back
// when its lease ends: no answer will.
func TestMachineCancelledCallsLeaseEndReleasesItsReservation(t *testing.T) {
	f := newFixture(t, `(m.remind :to "a" :as @a)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 1}}\n")
	f.advance()
	_, _, err := f.command(&machine.CancelRunbook{By: "ops"})
	require.NoError(t, err)
	require.InDelta(t, 0.07, f.rb.Spent.CostUSD, 1e-9)
	f.now = f.now.Add(f.m.LeaseTTL + time.Second)
	f.advance()
	require.InDelta(t, 0, f.rb.Spent.CostUSD, 1e-9, "nothing was reported spent; nothing stays reserved")
	require.InDelta(t, 0, f.budgets[DefaultTenant].Day.CostUSD, 1e-9)
}

// While one compensation's call is out the next waits for its outcome,
// which brings the round: the runbook does not ask to be advanced again at
// once, which claimed it over and over until the call returned.
func TestMachineCompensationWaitingItsTurnDoesNotWakeTheRunbook(t *testing.T) {
	f := newFixture(t, `(m.reserve :what "car" :as @car) (m.reserve :what "hotel" :after @car :as @hotel) (m.approve :what "pay" :after @hotel)`, nil)
	_, calls := f.advance()
	_, calls = f.advance(succeed(callFor(t, calls, "car"), map[string]any{}))
	f.advance(succeed(callFor(t, calls, "hotel"), map[string]any{}))
	_, _, err := f.command(&machine.CancelRunbook{By: "ops", Compensate: true})
	require.NoError(t, err)
	_, calls = f.advance()
	require.Equal(t, machine.CallCompensation, callFor(t, calls, "hotel").Purpose)
	require.Equal(t, rbtype.CompensationPending, f.step("car").CompensationStatus)
	require.NotNil(t, f.rb.WakeAt)
	require.True(t, f.rb.WakeAt.After(f.now), "due at the lease's end, not now: %v", f.rb.WakeAt)
}

// An escalated runbook waits for a person, who may give it up: a cancel
// is accepted, cancels it, undoes its completed steps, and it finishes
// once that has run (its finished_at cleared meanwhile).
func TestMachineCancelAnEscalatedRunbook(t *testing.T) {
	f := newFixture(t, `(m.reserve :what "car" :as @car) (m.wait-escalate :after @car :as @w)`, nil)
	_, calls := f.advance()
	_, calls = f.advance(succeed(callFor(t, calls, "car"), map[string]any{}))
	f.advance(parked(callFor(t, calls, "w"), ""))
	f.now = f.now.Add(2 * time.Hour)
	f.advance()
	require.Equal(t, rbtype.RunbookEscalated, f.rb.Status)
	require.NotNil(t, f.rb.FinishedAt)

	w, _, err := f.command(&machine.CancelRunbook{By: "ops", Compensate: true})
	require.NoError(t, err, "an escalated runbook can be given up")
	require.Equal(t, rbtype.RunbookCancelled, f.rb.Status)
	require.Equal(t, []string{"car"}, w.Compensate[f.rb.ID])
	require.Nil(t, f.rb.FinishedAt, "not finished while its compensation is to run")
	_, calls = f.advance()
	f.advance(succeed(callFor(t, calls, "car"), map[string]any{}))
	require.Equal(t, rbtype.CompensationComplete, f.step("car").CompensationStatus)
	require.NotNil(t, f.rb.FinishedAt)

	_, _, err = f.command(&machine.CancelRunbook{By: "ops"})
	require.NoError(t, err, "a cancelled runbook's cancel is a no-op")
}

// A draft_only runbook that failed runs its failure hooks; while they run
// it offers no retry --execute (refused until they have ended), and once
// they have it never names a hook (a hook is not retried).
func TestMachineDraftOffersNoExecuteWhileHooksRun(t *testing.T) {
	f := newFixtureIn(t, modelCatalogue(t), `(mc.echo :n "a" :as @a) (mc.cont :n "b" :after @a :as @b)
(on-failure (mc.gate :n "h" :f @failure.code :as @h) (mc.cont :n "h2" :as @h2))`, nil)
	f.rb.Mode = rbtype.ModeDraftOnly
	_, calls := f.advance()
	f.advance(failWith(callFor(t, calls, "a"), rbtype.CodeInvalidInput))
	f.advance() // the hooks start in the round after the end
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Equal(t, rbtype.StepWaitingApproval, f.step("h").Status, "the hook waits at its gate")
	require.Equal(t, rbtype.CodeDraftOnly, f.step("h2").ErrorCode)
	for _, a := range f.view().NextActions {
		require.NotEqual(t, apitype.ActionRetry, a.Kind, "offered while the hooks run: %s", a.Command)
	}
	_, _, err := f.command(&machine.RetryRunbook{O: machine.RetryOptions{By: "ops", Execute: true}})
	require.ErrorIs(t, err, rbtype.ErrConflict)

	_, calls, err = f.command(&machine.DecideGate{Step: "h", Approve: true, By: "ops"})
	require.NoError(t, err)
	f.advance(succeed(callFor(t, calls, "h"), map[string]any{}))
	require.NotNil(t, f.rb.FinishedAt)
	for _, a := range f.view().NextActions {
		require.NotEqual(t, "h2", a.Step, "a hook is not named: %s", a.Command)
		require.NoError(t, f.accepts(actionCommand(a)), a.Command)
	}
}

// actionCommand is the command an offered action stands for, nil for one
// that is not a command of the machine.
func actionCommand(a apitype.ActionView) machine.Command {
	switch a.Kind {
	case apitype.ActionApprove:
		return &machine.DecideGate{Step: a.Step, Approve: true, By: "ops"}
	case apitype.ActionResolve:
		return &machine.ResolveStep{Step: a.Step, R: machine.Resolution{Action: machine.ResolveComplete, By: "ops"}}
	case apitype.ActionRetry:
		return &machine.RetryRunbook{O: machine.RetryOptions{Steps: []string{a.Step}, Execute: a.Args.Execute, By: "ops"}}
	}
	return nil
}

// view is the runbook's view as GET /v1/runbooks/{id} builds it.
func (f *fixture) view() *apitype.RunbookView {
	var invs []driver.Invocation
	for _, inv := range f.invs {
		invs = append(invs, inv)
	}
	return buildView(f.rb, f.steps, invs, driver.StepPage{Limit: len(f.steps) + 1}, f.plan)
}

// A loop's templates expand together: a command that reopens one (a
// resolve of what it reads) reopens them all. Reopening only the one
// that read the resolved step left it pending beside a skipped mate, a
// loop that could never expand, and the runbook executing for ever with
// nothing to wait on.
func TestMachineReopeningATemplateReopensItsLoop(t *testing.T) {
	f := newFixtureIn(t, modelCatalogue(t), `(mc.iso :n "s0" :as @s0) (mc.doubt :n "s1" :as @s1) (mc.gate :n "s2" :as @s2)
(for-each @s0.v :as @x (mc.echo :n "a" :e @x :as @a) (mc.echo :n "b" :r @s1.v :as @b))`, nil)
	_, calls := f.advance()
	_, _, err := f.command(&machine.DecideGate{Step: "s2", By: "ops"}) // rejected: an abort
	require.NoError(t, err)
	require.Equal(t, rbtype.StepSkipped, f.step("a").Status)
	f.advance(succeed(callFor(t, calls, "s0"), map[string]any{"v": []any{0}}))
	f.now = f.now.Add(f.m.LeaseTTL + time.Second) // s1's worker died: in doubt
	f.advance()
	require.Equal(t, rbtype.StepInDoubt, f.step("s1").Status)

	_, calls, err = f.command(&machine.ResolveStep{Step: "s1", R: machine.Resolution{Action: machine.ResolveRetry, By: "ops"}})
	require.NoError(t, err)
	require.Equal(t, rbtype.StepPending, f.step("a").Status, "reopened with b, its loop's other template")
	for range 6 {
		var outs []*machine.Outcome
		for _, c := range calls {
			outs = append(outs, succeed(c, map[string]any{"v": 1}))
		}
		_, calls = f.advance(outs...)
	}
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status, "it ends, as the abort said: %v", f)
	for _, s := range f.steps {
		require.True(t, s.Status.Done(), "%s is %s", s.Key, s.Status)
	}
}

// A retry that runs an inner list's iteration again reopens that list's
// template and the outer list made of it: the outer list is made again
// once the inner one is, not left complete with the old nulls.
func TestMachineRetryReopensTheOuterListOfAnInnerOne(t *testing.T) {
	f := newFixtureIn(t, modelCatalogue(t), `(mc.echo :n "s0" :as @s0) (mc.iso :n "s1" :as @s1)
(for-each @s0.v :as @x (mc.echo :n "a" :as @a) (for-each @x :as @y (mc.echo :n "u" :r @s1.v :e @y :as @u)))`, nil)
	_, calls := f.advance()
	_, more := f.advance(succeed(callFor(t, calls, "s0"), map[string]any{"v": []any{[]any{1}}}))
	_, more2 := f.advance(failWith(callFor(t, calls, "s1"), rbtype.CodeInvalidInput))
	for left := append(more, more2...); len(left) > 0; {
		left = f.answer(left, nil)
	}
	f.settleRounds()
	require.Equal(t, rbtype.StepComplete, f.step("u").Status, "a failure under isolate: the list holds null: %v", f)
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status, "%v", f)

	_, calls, err := f.command(&machine.RetryRunbook{O: machine.RetryOptions{By: "ops"}})
	require.NoError(t, err)
	require.Equal(t, rbtype.StepPending, f.step("u[0]").Status)
	require.Equal(t, rbtype.StepPending, f.step("u").Status, "the outer list is not whole while its inner one runs again")
	for len(calls) > 0 {
		calls = f.answer(calls, nil)
	}
	f.settleRounds()
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status, "%v", f)
	require.JSONEq(t, `[[{"v":1}]]`, string(f.step("u").Result))
}

// An abort as a step starts, in the round a loop with an inner loop
// expanded, skips the inner lists' templates that round made, and their
// instances: none completes afterwards (an empty one with []) under a
// skipped outer list.
func TestMachineAbortSkipsTheInnerListsItsRoundMade(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @l)
(for-each @l.items :as @x (m.echo :e @x :as @a) (for-each @x :as @y (m.echo :e @y :as @u)))
(m.echo :v 2 :after @l :as @b)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 1}}\n")
	_, calls := f.advance()
	f.advance(costing(calls[0], map[string]any{"items": []any{[]any{1}, []any{}}}, 1))
	require.Equal(t, rbtype.CodeBudgetExceeded, f.step("b").ErrorCode)
	f.settleRounds()
	for _, k := range []string{"u", "u[0]", "u[0][0]", "u[1]", "a[0]"} {
		require.Equal(t, rbtype.StepSkipped, f.step(k).Status, "%s: %v", k, f)
	}
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
}

// A call whose worker died is made again, and is not skipped by an abort
// that comes in the same round: it was in flight, and a call in flight
// finishes; its reservation stays until it does.
func TestMachineAbortLetsAReclaimedCallFinish(t *testing.T) {
	f := newFixture(t, `(m.echo :v 0 :as @e) (m.echo :v 1 :after @e :as @f) (m.remind :to "a" :as @a)`, nil) // a after f: it starts after the abort
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 0.1}}\n")
	_, calls := f.advance()
	require.Len(t, calls, 2, "a reserves 0.07; e declares nothing")
	first := callFor(t, calls, "a")
	f.now = f.now.Add(f.m.LeaseTTL + time.Second) // a's worker died; e's answer comes now
	_, calls = f.advance(costing(callFor(t, calls, "e"), map[string]any{}, 0.05))
	require.Equal(t, rbtype.CodeBudgetExceeded, f.step("f").ErrorCode, "0.05 spent and 0.07 reserved pass 0.1: f fails, an abort")
	again := callFor(t, calls, "a")
	require.Equal(t, first.Call.IdempotencyKey, again.Call.IdempotencyKey)
	require.Equal(t, rbtype.StepRunning, f.step("a").Status, "called again, not skipped: %v", f)
	f.advance(costing(again, map[string]any{}, 0.07))
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.InDelta(t, 0.12, f.rb.Spent.CostUSD, 1e-9, "what both spent, nothing left reserved")
}
