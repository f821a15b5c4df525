package runtime

import (
	"context"
	"time"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// costing is the outcome of a call that returned value and reported a
// cost.
func costing(c *machine.PendingCall, value any, costUSD float64) *machine.Outcome {
	o := succeed(c, value)
	o.Result.Usage = driver.Usage{CostUSD: costUSD, TokensIn: 10}
	return o
}

func mustPolicy(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(src), policy.WellKnownTags)
	require.NoError(t, err)
	return p
}

// TestMachineBudgetStopsTheThirdStep: three steps that each cost 4 under
// a runbook budget of 8. Two run (8 spent, at the budget); the third is
// never called: it fails BUDGET_EXCEEDED, final, and the runbook fails
// (abort). Once the budget is raised, a retry runs it, with the same key.
func TestMachineBudgetStopsTheThirdStep(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @a) (m.echo :v @a.v :as @b) (m.echo :v @b.v :as @c)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 8}}\n")
	_, calls := f.advance()
	require.Len(t, calls, 1)
	_, calls = f.advance(costing(callFor(t, calls, "a"), map[string]any{"v": 1}, 4))
	require.Len(t, calls, 1, "4 of 8 spent: b starts")
	w, calls := f.advance(costing(callFor(t, calls, "b"), map[string]any{"v": 1}, 4))
	require.Empty(t, calls, "8 of 8 spent: c is never called")
	require.Empty(t, w.Leases)
	require.Equal(t, rbtype.StepFailed, f.step("c").Status)
	require.Equal(t, rbtype.CodeBudgetExceeded, f.step("c").ErrorCode)
	require.Zero(t, f.step("c").Attempt, "no attempt was made")
	require.Equal(t, machine.BudgetExceededData{Budget: rbtype.BudgetRunbook, Measure: "cost_usd", Limit: "8", Spent: "8", Rule: "default.budget.runbook"},
		eventData[machine.BudgetExceededData](t, w.Events, "BUDGET_EXCEEDED c"))
	require.Contains(t, eventNames(w.Events), "STEP_FAILED c")
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Equal(t, 8.0, f.rb.Spent.CostUSD)

	// A retry with the budget still spent refuses again, without a call.
	_, calls, err := f.command(&machine.RetryRunbook{O: machine.RetryOptions{By: "ops"}})
	require.NoError(t, err)
	require.Empty(t, calls)
	require.Equal(t, rbtype.CodeBudgetExceeded, f.step("c").ErrorCode)

	// An admin raises it (rbd budget set): the retry runs c.
	f.budgets[DefaultTenant] = driver.TenantBudget{Set: map[rbtype.BudgetScope]rbtype.Budget{rbtype.BudgetRunbook: {CostUSD: ptr(12.0)}}}
	_, calls, err = f.command(&machine.RetryRunbook{O: machine.RetryOptions{By: "ops"}})
	require.NoError(t, err)
	c := callFor(t, calls, "c")
	require.Equal(t, 1, c.Attempt)
	f.advance(costing(c, map[string]any{"v": 1}, 4))
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
}

func ptr[T any](v T) *T { return &v }

// TestMachineBudgetCountsTheRoundsOwnSpend: what this transaction records
// counts before it is stored. Two steps readied by one outcome: the one
// that reported the cost already spent the budget.
func TestMachineBudgetCountsTheRoundsOwnSpend(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @a) (m.echo :v @a.v) (m.echo :v @a.v)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {tokens: 10}}\n")
	_, calls := f.advance()
	w, calls := f.advance(costing(callFor(t, calls, "a"), map[string]any{"v": 1}, 0)) // 10 tokens
	require.Empty(t, calls)
	require.Equal(t, machine.BudgetExceededData{Budget: rbtype.BudgetRunbook, Measure: "tokens", Limit: "10", Spent: "10", Rule: "default.budget.runbook"},
		eventData[machine.BudgetExceededData](t, w.Events, "BUDGET_EXCEEDED m.echo#2"))
}

// TestMachineBudgetOfTheTenant: a tenant's day and month budgets count
// every runbook of the tenant (the load's roll-up); the runbook's own
// budget lowers the tenant's runbook budget; a budget an admin set
// replaces the policy's.
func TestMachineBudgetOfTheTenant(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {day: {cost_usd: 100}, month: {credits: 50}}\n")
	f.budgets[DefaultTenant] = driver.TenantBudget{Day: rbtype.Spend{CostUSD: 100}}
	w, calls := f.advance()
	require.Empty(t, calls)
	require.Equal(t, rbtype.BudgetDay, eventData[machine.BudgetExceededData](t, w.Events, "BUDGET_EXCEEDED m.echo#1").Budget)

	f = newFixture(t, `(m.echo :v 1)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {day: {cost_usd: 100}, month: {credits: 50}}\n")
	f.budgets[DefaultTenant] = driver.TenantBudget{Day: rbtype.Spend{CostUSD: 99}, Month: rbtype.Spend{Credits: 50}}
	w, calls = f.advance()
	require.Empty(t, calls)
	require.Equal(t, machine.BudgetExceededData{Budget: rbtype.BudgetMonth, Measure: "credits", Limit: "50", Spent: "50", Rule: "default.budget.month"},
		eventData[machine.BudgetExceededData](t, w.Events, "BUDGET_EXCEEDED m.echo#1"))

	// Set by an admin: the policy's month no longer applies.
	f = newFixture(t, `(m.echo :v 1)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {month: {credits: 50}}\n")
	f.budgets[DefaultTenant] = driver.TenantBudget{Month: rbtype.Spend{Credits: 50},
		Set: map[rbtype.BudgetScope]rbtype.Budget{rbtype.BudgetMonth: {Credits: ptr(3000.0)}}}
	_, calls = f.advance()
	require.Len(t, calls, 1)

	// The runbook's own budget is lower than the tenant's.
	f = newFixture(t, `(m.echo :v 1)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 20}}\n")
	f.rb.Budget, f.rb.Spent = &rbtype.Budget{CostUSD: ptr(5.0)}, rbtype.Spend{CostUSD: 5}
	w, calls = f.advance()
	require.Empty(t, calls)
	require.Equal(t, "the runbook's own budget, or default.budget.runbook", eventData[machine.BudgetExceededData](t, w.Events, "BUDGET_EXCEEDED m.echo#1").Rule)

	// Another tenant's spend is not this one's.
	f = newFixture(t, `(m.echo :v 1)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {day: {cost_usd: 100}}\n")
	f.budgets["acme"] = driver.TenantBudget{Day: rbtype.Spend{CostUSD: 1000}}
	_, calls = f.advance()
	require.Len(t, calls, 1)
}

// TestMachineBudgetUnderIsolate: a step stopped by a budget follows its
// failure mode: under isolate only what depends on it is skipped.
func TestMachineBudgetUnderIsolate(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @a) (m.echo :v @a.v :on-failure "isolate" :as @b) (m.echo :v @b.v) (m.remind :to "x")`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 1}}\n")
	_, calls := f.advance()
	require.Len(t, calls, 2, "a and the independent step, which reserves its cost, start at once")
	f.advance(costing(callFor(t, calls, "a"), map[string]any{"v": 1}, 0.93))
	require.Equal(t, rbtype.StepFailed, f.step("b").Status, "0.93 spent and 0.07 reserved: the budget is spent")
	require.Equal(t, rbtype.StepSkipped, f.step("m.echo#3").Status)
	require.Equal(t, rbtype.StepRunning, f.step("m.remind#4").Status, "an attempt already running is not stopped")
	f.advance(costing(callFor(t, calls, "m.remind#4"), map[string]any{"v": 2}, 0.07))
	require.Equal(t, rbtype.StepComplete, f.step("m.remind#4").Status, "and its outcome is recorded")
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Equal(t, 1.0, f.rb.Spent.CostUSD)
}

// Under a cost budget, steps whose verbs declare no cost run one at a
// time within the runbook: each may spend anything, so the budget is
// passed by one attempt at most. The second waits, ready, blocked on
// BUDGET_EXCEEDED, and starts once the first has ended.
func TestMachineBudgetRunsUnreservedStepsOneAtATime(t *testing.T) {
	f, calls := heldBehindTheFirst(t, "runbook: {cost_usd: 1}", "runbook")
	_, calls = f.advance(costing(calls[0], map[string]any{}, 2))
	require.Empty(t, calls, "the first passed the budget: the second fails, never called")
	require.Equal(t, rbtype.StepFailed, f.step("m.echo#2").Status)
	require.Equal(t, 2.0, f.rb.Spent.CostUSD, "passed by one attempt's spend, no more")

	f = newFixture(t, `(m.echo :v 1) (m.echo :v 2)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 1}}\n")
	_, calls = f.advance()
	_, calls = f.advance(costing(calls[0], map[string]any{}, 0.5))
	require.Len(t, calls, 1, "the first ended within the budget: the second starts")
	require.Empty(t, f.step("m.echo#2").ErrorCode)
}

// TestMachineHighRiskGateNeedsAHighRiskApprover: a gate on a step of risk
// high is decided only by a token allowed high (docs/design/semantics.md
// section 10); a medium one is refused, and the step still waits.
func TestMachineHighRiskGateNeedsAHighRiskApprover(t *testing.T) {
	f := newFixture(t, `(m.wire :amount 5)`, nil)
	f.advance()
	require.Equal(t, rbtype.StepWaitingApproval, f.step("m.wire#1").Status)
	_, _, err := f.command(&machine.DecideGate{Step: "m.wire#1", Approve: true, By: "bob", Ceiling: rbtype.RiskMedium})
	require.ErrorIs(t, err, rbtype.ErrForbidden)
	require.ErrorContains(t, err, `step "m.wire#1" calls verb m.wire of risk high; its gate is decided only by a token with max_risk=high (or admin), and this one's is medium`)
	require.Equal(t, rbtype.StepWaitingApproval, f.step("m.wire#1").Status)
	_, _, err = f.command(&machine.DecideGate{Step: "m.wire#1", By: "bob", Ceiling: rbtype.RiskMedium})
	require.ErrorIs(t, err, rbtype.ErrForbidden, "nor reject it")
	_, calls, err := f.command(&machine.DecideGate{Step: "m.wire#1", Approve: true, By: "alice", Ceiling: rbtype.RiskHigh})
	require.NoError(t, err)
	require.Len(t, calls, 1)
}

// Budgets hold under concurrency: six reminders of a declared 0.07 each,
// started together under a runbook budget of 0.1. The first reserves its
// cost as it starts; the other five would pass the budget and wait,
// ready, with BUDGET_EXCEEDED (the event once each), never called. Spend
// stays within the cap; once the budget is raised, they start by
// themselves, without a retry.
func TestMachineBudgetReservesTheDeclaredCost(t *testing.T) {
	f := newFixture(t, `(for-each $people :as @p (m.remind :to @p :as @r))`, map[string]any{"people": []any{"a", "b", "c", "d", "e", "f"}})
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 0.1}}\n")
	f.advance()
	w, calls := f.advance()
	require.Len(t, calls, 1, "one reservation fits: %v", f)
	require.Equal(t, 0.07, f.rb.Spent.CostUSD, "reserved as it started")
	held := 0
	for _, s := range f.steps {
		if s.Status == rbtype.StepReady && s.ErrorCode == rbtype.CodeBudgetExceeded {
			held++
			require.Zero(t, s.Attempt, "never called")
		}
	}
	require.Equal(t, 5, held)
	require.Len(t, eventsNamed(w.Events, "BUDGET_EXCEEDED"), 5)
	require.Equal(t, f.now.Add(machine.BudgetRecheck), *f.rb.WakeAt, "looked at again later, not at once")

	// It spent what it declared: the reservation becomes the spend.
	w, calls = f.advance(costing(calls[0], map[string]any{}, 0.07))
	require.Empty(t, calls)
	require.Equal(t, 0.07, f.rb.Spent.CostUSD)
	require.Empty(t, eventsNamed(w.Events, "BUDGET_EXCEEDED"), "said once")

	// An admin raises it: the next look starts what now fits, by itself.
	f.budgets[DefaultTenant] = driver.TenantBudget{Set: map[rbtype.BudgetScope]rbtype.Budget{rbtype.BudgetRunbook: {CostUSD: ptr(0.25)}}}
	f.now = f.now.Add(machine.BudgetRecheck)
	_, calls = f.advance()
	require.Len(t, calls, 2, "0.07 spent, two more reservations fit in 0.25")
	require.LessOrEqual(t, f.rb.Spent.CostUSD, 0.25)
}

func eventsNamed(evs []driver.Event, typ string) []driver.Event {
	var out []driver.Event
	for _, e := range evs {
		if string(e.Type) == typ {
			out = append(out, e)
		}
	}
	return out
}

// A call whose worker died is called again under its key without the
// budget judging it again: the budget admitted the attempt when it
// started, and it keeps its reservation. Two reminders of 0.07 fit a cap
// of 0.14; the first spends 0.105, and the second's worker dies. Judged
// again (0.105 spent, 0.07 to reserve) it would wait for a raise, its
// call perhaps half made.
func TestMachineBudgetCallsAReclaimedAttemptAgain(t *testing.T) {
	f := newFixture(t, `(m.remind :to "a" :as @a) (m.remind :to "b" :as @b)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {runbook: {cost_usd: 0.14}}\n")
	_, calls := f.advance()
	require.Len(t, calls, 2, "both reservations fit")
	first := callFor(t, calls, "b")
	_, calls = f.advance(costing(callFor(t, calls, "a"), map[string]any{}, 0.105))
	require.Empty(t, calls)

	f.now = f.now.Add(f.m.LeaseTTL + time.Second) // b's worker died
	_, calls = f.advance()
	require.Len(t, calls, 1, "called again, not held: %v", f)
	again := callFor(t, calls, "b")
	require.Equal(t, first.Call.IdempotencyKey, again.Call.IdempotencyKey, "the same effect, asked again under its key")
	require.InDelta(t, 0.175, f.rb.Spent.CostUSD, 1e-9, "0.105 spent and b's reservation, kept through the reclaim")

	f.advance(costing(again, map[string]any{}, 0.07))
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
	require.InDelta(t, 0.175, f.rb.Spent.CostUSD, 1e-9, "passed by what a spent beyond what it reserved, no more")
}

// Under the tenant's day budget, as under the runbook's, steps whose
// verbs declare no cost run one at a time within the runbook: the second
// waits, BUDGET_EXCEEDED naming the day's budget, until the first has
// ended.
func TestMachineBudgetRunsUnreservedStepsOneAtATimeUnderADayBudget(t *testing.T) {
	f, calls := heldBehindTheFirst(t, "day: {cost_usd: 5}", "day")
	_, calls = f.advance(costing(calls[0], map[string]any{}, 1))
	require.Len(t, calls, 1, "the first ended: the second starts")
}

// heldBehindTheFirst starts two steps whose verb declares no cost under
// the policy's budget and requires the second to wait, ready, blocked on
// BUDGET_EXCEEDED naming scope's budget, while the first runs; it returns
// the first's call.
func heldBehindTheFirst(t *testing.T, budget, scope string) (*fixture, []*machine.PendingCall) {
	t.Helper()
	f := newFixture(t, `(m.echo :v 1) (m.echo :v 2)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {"+budget+"}\n")
	_, calls := f.advance()
	require.Len(t, calls, 1)
	held := f.step("m.echo#2")
	require.Equal(t, rbtype.StepReady, held.Status)
	require.Equal(t, rbtype.CodeBudgetExceeded, held.ErrorCode)
	require.Contains(t, held.ErrorMessage, "under the "+scope+" budget")
	require.Contains(t, held.ErrorMessage, "declare cost: {usd: N}")
	return f, calls
}

// Under the tenant's day budget, steps whose verbs declare no cost run one
// at a time among all the tenant's runbooks, not only those one round
// advances: a step waits while another runbook's such attempt runs, as the
// load counted it (tenant_unreserved_attempts), marking its runbook
// waiting to be woken when one ends; it starts once none runs, counted as
// it starts and no longer as it ends. A tenant with no day or month cap
// writes no count at all.
func TestMachineBudgetHoldsUnreservedStepsBehindAnotherRunbooksUnderADayBudget(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @a)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {day: {cost_usd: 5}}\n")
	tenant := f.rb.Tenant
	f.budgets = map[string]driver.TenantBudget{tenant: {Unreserved: 1}}
	w, calls := f.advance()
	require.Empty(t, calls, "another runbook's attempt that reserved nothing runs")
	held := f.step("a")
	require.Equal(t, rbtype.StepReady, held.Status)
	require.Equal(t, rbtype.CodeBudgetExceeded, held.ErrorCode)
	require.Contains(t, held.ErrorMessage, "under the day budget")
	require.Equal(t, []driver.UnreservedChange{{RunbookID: f.rb.ID, Tenant: tenant, Waits: true}}, w.Unreserved)

	f.budgets[tenant] = driver.TenantBudget{} // the other ended
	w, calls = f.advance()
	require.Len(t, calls, 1)
	require.Equal(t, []driver.UnreservedChange{{RunbookID: f.rb.ID, Tenant: tenant, Running: 1}}, w.Unreserved)
	w, _ = f.advance(costing(calls[0], map[string]any{}, 1))
	require.Equal(t, []driver.UnreservedChange{{RunbookID: f.rb.ID, Tenant: tenant, Running: -1}}, w.Unreserved)
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)

	for _, budget := range []string{"", "budget: {runbook: {cost_usd: 5}}"} {
		f := newFixture(t, `(m.echo :v 1 :as @a) (m.echo :v @a.v)`, nil)
		f.pol = mustPolicy(t, "default: {"+budget+"}\n")
		f.budgets = map[string]driver.TenantBudget{tenant: {Unreserved: 3}}
		w, calls := f.advance()
		require.Len(t, calls, 1, "no day or month cap: the count is not looked at (%q)", budget)
		require.Empty(t, w.Unreserved)
		w, calls = f.advance(succeed(calls[0], map[string]any{"v": 1}))
		require.Len(t, calls, 1)
		require.Empty(t, w.Unreserved)
	}
}

// A pure step called inline, inside the advance that starts it, ends
// there too: under a day budget it counts among the tenant's attempts
// that reserved nothing while it runs, and no longer once its outcome is
// recorded in the same advance, so the runbook's count comes back to
// none and no other runbook waits on it.
func TestMachineBudgetCountsInlineStepsOnlyWhileTheyRun(t *testing.T) {
	f := newFixture(t, `(m.pure :v 1 :as @a) (m.pure :v @a.v :as @b)`, nil)
	f.pol = mustPolicy(t, "default:\n  budget: {day: {cost_usd: 5}}\n")
	f.m.Inline = func(pc *machine.PendingCall) *machine.Outcome { return makeCall(context.Background(), pc) }
	w, calls := f.advance()
	require.Empty(t, calls)
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status, "both ran inline")
	running := 0
	for _, c := range w.Unreserved {
		running += c.Running
		require.False(t, c.Waits)
	}
	require.Zero(t, running, "each inline call counted as it started and no longer as it ended: %+v", w.Unreserved)
}
