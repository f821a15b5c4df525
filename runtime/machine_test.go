package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/verbs"
)

// These tests run the state machine of docs/design/runtime.md without a database:
// loaded state and outcomes in, the writes it plans out. Each covers one
// state change; machine_fixture_test.go holds the fixture.

// pending → ready → running: a step whose predecessors completed is
// leased and started in the transaction that readied it (its STEP_READY
// elided), with its idempotency key and resolved arguments.
func TestMachineStartsReadyStepsAndChainsResults(t *testing.T) {
	f := newFixture(t, `(m.echo :v $who :as @a) (m.send :to @a.v :as @b)`, map[string]any{"who": "ada"})
	w, calls := f.advance()
	require.Equal(t, []string{"STEP_STARTED a"}, eventNames(w.Events))
	require.Equal(t, []string{"a"}, f.leasedKeys(w))
	require.Equal(t, f.now.Add(30*time.Second), w.LeaseUntil)
	a := callFor(t, calls, "a")
	require.Equal(t, 1, a.Attempt)
	require.Equal(t, map[string]any{"v": "ada"}, a.Call.Args)
	require.NotEmpty(t, a.Call.IdempotencyKey)
	require.Equal(t, rbtype.StepRunning, f.step("a").Status)
	require.Equal(t, rbtype.StepPending, f.step("b").Status)
	require.JSONEq(t, `{"v":"ada"}`, string(f.step("a").ResolvedArgs))

	// running → complete: the outcome is recorded, b becomes ready, reads
	// a's result and starts, in one transaction.
	w, calls = f.advance(succeed(a, map[string]any{"v": "ada"}))
	require.Equal(t, []string{"STEP_SUCCEEDED a", "STEP_STARTED b"}, eventNames(w.Events))
	require.Empty(t, w.Receipts, "m.echo has no side effects: no receipt")
	b := callFor(t, calls, "b")
	require.Equal(t, map[string]any{"to": "ada"}, b.Call.Args)

	// A step with side effects leaves a receipt with its completion; the
	// runbook completes when every step has.
	w, calls = f.advance(succeed(b, map[string]any{"sent": true}))
	require.Empty(t, calls)
	require.Equal(t, []string{"STEP_SUCCEEDED b", "RUNBOOK_COMPLETED"}, eventNames(w.Events))
	require.Len(t, w.Receipts, 1)
	require.Equal(t, b.Call.IdempotencyKey, w.Receipts[0].IdempotencyKey)
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
	require.NotNil(t, f.rb.FinishedAt)
	require.Nil(t, f.rb.WakeAt, "a finished runbook needs no worker")
}

// A step readied by a predecessor that completed in the same transaction
// takes that result from the step in hand: the table does not have it
// yet, and reading it would be a round trip for nothing. A predecessor
// that completed in an earlier transaction is read.
func TestMachineTakesAResultOfThisRoundFromTheStep(t *testing.T) {
	f := newFixture(t, `(m.echo :v $who :as @a) (m.echo :v @a.v :as @b) (m.send :to @a.v :after @b :as @c)`, map[string]any{"who": "ada"})
	_, calls := f.advance()
	_, calls = f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": "ada"}))
	require.Empty(t, f.fetched, "a completed in this transaction")
	b := callFor(t, calls, "b")
	require.Equal(t, map[string]any{"v": "ada"}, b.Call.Args)

	_, calls = f.advance(succeed(b, map[string]any{"v": "ada"}))
	require.Equal(t, []string{"a"}, f.fetched, "a, from an earlier transaction, is read; b, from this one, is not")
	require.Equal(t, map[string]any{"to": "ada"}, callFor(t, calls, "c").Call.Args)
}

// A pure step with no side effects whose handler may run inline is called
// in the transaction that starts it, and the steps it readies start there
// too when they need nothing read: a chain of pure steps finishes in one
// transaction, and a step of another verb is leased in it. A step whose
// verb caches waits for the next transaction's cache lookup.
func TestMachineRunsPureStepsInline(t *testing.T) {
	f := newFixture(t, `(m.pure :v $who :as @a) (m.pure :v @a.v :as @b) (m.echo :v @b.v :as @c)
		(m.pure :v @c.v :as @d) (m.pure-cached :v @d.v :as @e)`, map[string]any{"who": "ada"})
	f.m.Inline = func(pc *machine.PendingCall) *machine.Outcome { return makeCall(context.Background(), pc) }

	w, calls := f.advance()
	require.Equal(t, []string{"STEP_STARTED a", "STEP_SUCCEEDED a", "STEP_STARTED b", "STEP_SUCCEEDED b", "STEP_STARTED c"},
		eventNames(w.Events))
	require.Equal(t, []string{"c"}, f.leasedKeys(w), "a and b took no lease")
	require.Len(t, calls, 1)
	require.Equal(t, map[string]any{"v": "ada"}, callFor(t, calls, "c").Call.Args)
	// Each inline call has its ledger row: a plain success, kept in the
	// row of the step it completed.
	require.Empty(t, w.Attempts)
	for _, key := range []string{"a", "b"} {
		l := f.implicitLedger(w, key)
		require.NotNil(t, l, key)
		require.Equal(t, f.m.Worker, l.WorkerID)
		require.Equal(t, machine.AttemptID(f.rb.ID, key, 1), l.ID, "the attempt id a leased call would have")
	}
	require.JSONEq(t, `{"v":"ada"}`, string(f.step("b").Result))

	w, calls = f.advance(succeed(callFor(t, calls, "c"), map[string]any{"v": "ada"}))
	require.Equal(t, []string{"STEP_SUCCEEDED c", "STEP_STARTED d", "STEP_SUCCEEDED d", "STEP_READY e"}, eventNames(w.Events),
		"d runs inline; e's verb caches, so it waits for the next transaction's cache lookup")
	require.Empty(t, f.leasedKeys(w))
	require.Empty(t, calls)
	require.Equal(t, f.now, *f.rb.WakeAt, "e is ready: the runbook is due at once")

	w, calls = f.advance()
	require.Equal(t, []string{"STEP_STARTED e"}, eventNames(w.Events))
	w, _ = f.advance(succeed(callFor(t, calls, "e"), map[string]any{"v": "ada"}))
	require.Equal(t, []string{"STEP_SUCCEEDED e", "RUNBOOK_COMPLETED"}, eventNames(w.Events))
}

// Without an inline caller (a machine that has none), pure steps are
// leased like any other.
func TestMachineLeasesPureStepsWithoutAnInlineCaller(t *testing.T) {
	f := newFixture(t, `(m.pure :v $who :as @a) (m.pure :v @a.v :as @b)`, map[string]any{"who": "ada"})
	w, calls := f.advance()
	require.Equal(t, []string{"STEP_STARTED a"}, eventNames(w.Events))
	require.Equal(t, []string{"a"}, f.leasedKeys(w))
	require.Len(t, calls, 1)
}

// running → failed_retryable → ready → running: a retryable failure with
// attempts left waits out its backoff (base * 2^(attempt-1) plus jitter
// from the step and attempt), then runs again with the same key.
func TestMachineRetriesWithBackoffThenFailsForGood(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s) (m.echo :after @s :as @next) (m.echo :v 2 :as @other)`, nil)
	_, calls := f.advance()
	s1 := callFor(t, calls, "s")
	other := callFor(t, calls, "other")

	w, _ := f.advance(failWith(s1, rbtype.CodeRateLimit), succeed(other, map[string]any{"v": 2}))
	require.Equal(t, rbtype.StepFailedRetryable, f.step("s").Status)
	retry := eventData[machine.RetryScheduledData](t, w.Events, "STEP_RETRY_SCHEDULED s")
	exec := f.plan.Steps["s"].Execution
	delay := machine.RetryDelay(exec.Retry, machine.StepSeed(machine.OriginOf(f.rb, &exec), "s", 1), 1)
	require.Equal(t, rbtype.CodeRateLimit, retry.Code)
	require.Equal(t, delay.Milliseconds(), retry.DelayMS)
	require.True(t, retry.NextAttemptAt.Equal(f.now.Add(delay)))
	require.GreaterOrEqual(t, delay, time.Second)
	require.Less(t, delay, 1200*time.Millisecond, "jitter adds at most a fifth")
	require.True(t, f.rb.WakeAt.Equal(f.now.Add(delay)), "the runbook wakes when the retry is due")

	// Not yet due: nothing happens to it.
	w, calls = f.advance()
	require.Empty(t, callsFor(calls, "s"))
	require.Equal(t, rbtype.StepFailedRetryable, f.step("s").Status)

	// Due: ready (a retry) and started as attempt 2 with the same key.
	f.now = f.now.Add(delay)
	w, calls = f.advance()
	require.Equal(t, []string{"STEP_STARTED s"}, eventNames(w.Events), "the retry's STEP_READY is elided when it starts at once")
	s2 := callFor(t, calls, "s")
	require.Equal(t, 2, s2.Attempt)
	require.Equal(t, s1.Call.IdempotencyKey, s2.Call.IdempotencyKey)

	// Attempt 2 fails retryably too, with a doubled delay; attempt 3, the
	// last of max_attempts, fails for good.
	w, _ = f.advance(failWith(s2, rbtype.CodeTemporaryProviderError))
	second := eventData[machine.RetryScheduledData](t, w.Events, "STEP_RETRY_SCHEDULED s")
	require.GreaterOrEqual(t, second.DelayMS, int64(2000), "the delay doubles")
	f.now = second.NextAttemptAt
	_, calls = f.advance()
	s3 := callFor(t, calls, "s")
	require.Equal(t, 3, s3.Attempt)

	w, _ = f.advance(failWith(s3, rbtype.CodeRateLimit))
	require.Equal(t, rbtype.StepFailed, f.step("s").Status)
	require.Equal(t, machine.StepFailedData{Code: rbtype.CodeRateLimit, Message: "failed with RATE_LIMIT"},
		eventData[machine.StepFailedData](t, w.Events, "STEP_FAILED s"))
	// running → failed: dependents are skipped; the independent branch
	// went on; the runbook ends failed with what completed still there.
	require.Equal(t, rbtype.StepSkipped, f.step("next").Status)
	require.Equal(t, machine.StepSkippedData{Because: "s", Status: rbtype.StepFailed}, eventData[machine.StepSkippedData](t, w.Events, "STEP_SKIPPED next"))
	require.Equal(t, rbtype.StepComplete, f.step("other").Status)
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Equal(t, rbtype.CodeRateLimit, f.rb.ErrorCode)
	require.Contains(t, eventNames(w.Events), "RUNBOOK_FAILED")
}

// callsFor filters calls by step key.
func callsFor(calls []*machine.PendingCall, key string) []*machine.PendingCall {
	var out []*machine.PendingCall
	for _, c := range calls {
		if c.Call.StepKey == key {
			out = append(out, c)
		}
	}
	return out
}

// A final code fails at once, whatever attempts are left.
func TestMachineFinalCodeIsNotRetried(t *testing.T) {
	for _, code := range []rbtype.ErrorCode{rbtype.CodePolicyDenied, rbtype.CodeInvalidInput, rbtype.CodeSchemaValidationFailed,
		rbtype.CodeMissingRequiredContext, rbtype.CodeAuthForbidden, rbtype.CodeInternal, "SOMETHING_UNCLASSIFIED"} {
		t.Run(string(code), func(t *testing.T) {
			f := newFixture(t, `(m.send :to "x" :as @s)`, nil)
			_, calls := f.advance()
			w, _ := f.advance(failWith(callFor(t, calls, "s"), code))
			require.Equal(t, rbtype.StepFailed, f.step("s").Status)
			require.Equal(t, []string{"STEP_FAILED s", "RUNBOOK_FAILED"}, eventNames(w.Events))
		})
	}
}

// A plan naming a handler this daemon lacks fails with
// DEPENDENCY_UNAVAILABLE, counting each attempt, so that max_attempts
// ends it instead of retrying forever.
func TestMachineMissingHandlerUsesUpItsAttempts(t *testing.T) {
	f := newFixture(t, `(m.ghost :as @g)`, nil)
	w, calls := f.advance()
	require.Empty(t, calls)
	require.Equal(t, rbtype.StepFailedRetryable, f.step("g").Status)
	require.Equal(t, 1, f.step("g").Attempt)
	require.Equal(t, rbtype.CodeDependencyUnavailable, eventData[machine.RetryScheduledData](t, w.Events, "STEP_RETRY_SCHEDULED g").Code)
	f.now = f.now.Add(2 * time.Second)
	w, _ = f.advance()
	require.Equal(t, rbtype.StepFailed, f.step("g").Status, "max_attempts is 2")
	require.Equal(t, 2, f.step("g").Attempt)
	require.Contains(t, eventNames(w.Events), "RUNBOOK_FAILED")
}

// An outcome whose lease this worker no longer held (it expired and the
// step was reclaimed) is dropped; a running step whose lease is gone is
// reclaimed: ready again, then started as the next attempt with the same
// key.
func TestMachineReclaimsAbandonedStepsAndDropsStaleOutcomes(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s)`, nil)
	_, calls := f.advance()
	first := callFor(t, calls, "s")
	f.now = f.now.Add(31 * time.Second) // the lease expired: the worker died
	w, calls := f.advance()
	require.Equal(t, []string{"STEP_RECLAIMED s", "STEP_STARTED s"}, eventNames(w.Events), "the reclaim's STEP_READY is elided by the start")
	reclaimed := eventData[machine.StepReclaimedData](t, w.Events, "STEP_RECLAIMED s")
	require.True(t, reclaimed.SuspectCommit, "m.send is an external call with no receipt: it may have taken effect")
	again := callFor(t, calls, "s")
	require.Equal(t, 2, again.Attempt)
	require.Equal(t, first.Call.IdempotencyKey, again.Call.IdempotencyKey)

	// The first attempt's late outcome is dropped; the second's counts.
	w, _ = f.advance(succeed(first, map[string]any{"late": true}))
	require.Empty(t, w.Steps)
	require.Equal(t, rbtype.StepRunning, f.step("s").Status)
	f.advance(succeed(again, map[string]any{"ok": true}))
	require.Equal(t, rbtype.StepComplete, f.step("s").Status)
	require.JSONEq(t, `{"ok":true}`, string(f.step("s").Result))
}

// A reclaimed step that cannot start in the transaction that reclaims it
// keeps its own STEP_READY, marked reclaimed.
func TestMachineReclaimKeepsReadyWhenTheStepCannotStart(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s)`, nil)
	f.advance()
	f.m.Handler = func(string) (handler.Handler, bool) { return nil, false } // no handler: it cannot start
	f.now = f.now.Add(31 * time.Second)
	w, _ := f.advance()
	require.Equal(t, machine.StepReadyData{Reclaimed: true}, eventData[machine.StepReadyData](t, w.Events, "STEP_READY s"))
}

// A step whose global-scope key already has a receipt completes from it,
// without a call.
func TestMachineCompletesFromAReceipt(t *testing.T) {
	f := newFixture(t, `(m.send-once :to "x" :as @s)`, nil)
	first := newFixture(t, `(m.send-once :to "x" :as @s)`, nil)
	first.rb.ID = uuid.MustParse("00000000-0000-5000-8000-000000000002")
	for _, s := range first.steps {
		s.RunbookID = first.rb.ID
	}
	_, calls := first.advance()
	c := callFor(t, calls, "s")
	first.advance(succeed(c, map[string]any{"message_id": "m-1"}))
	f.receipts = first.receipts // the receipts table is shared

	w, calls := f.advance()
	require.Empty(t, calls, "the effect happened once already")
	require.Equal(t, machine.StepSucceededData{Receipt: true}, eventData[machine.StepSucceededData](t, w.Events, "STEP_SUCCEEDED s"))
	require.JSONEq(t, `{"message_id":"m-1"}`, string(f.step("s").Result))
}

// running → parked → complete: the invocation is persisted when the step
// starts (before the handler starts the external work), the park records
// the external id, and a notification completes the step with its result
// and a receipt.
func TestMachineParksAndResumesOnANotification(t *testing.T) {
	f := newFixture(t, `(m.wait :who "ada" :as @w) (m.echo :got @w.answer :as @e)`, nil)
	w, calls := f.advance()
	require.Len(t, w.NewInvocations, 1)
	inv := w.NewInvocations[0]
	require.Equal(t, rbtype.InvocationActive, inv.Status)
	require.Equal(t, f.now.Add(time.Hour), inv.TimeoutAt)
	c := callFor(t, calls, "w")
	require.Equal(t, inv.CorrelationKey, c.Call.CorrelationKey)
	require.Equal(t, "http://rbd.test/v1/notifications", c.Call.CallbackURL)
	id, key := f.m.Keys.InvocationIDs(f.rb.ID, "w", 1)
	require.Equal(t, id, inv.InvocationID, "derived from runbook, step and attempt")
	require.Equal(t, key, inv.CorrelationKey)

	w, _ = f.advance(parked(c, "ext-42"))
	require.Equal(t, rbtype.StepParked, f.step("w").Status)
	require.Equal(t, machine.StepParkedData{CorrelationKey: key, TimeoutAt: inv.TimeoutAt}, eventData[machine.StepParkedData](t, w.Events, "STEP_PARKED w"))
	require.Equal(t, []driver.InvocationUpdate{{ID: id, ExternalID: "ext-42"}}, w.InvocationUpdates)
	require.True(t, f.rb.WakeAt.Equal(inv.TimeoutAt), "parked: the runbook wakes at the timeout")

	f.now = f.now.Add(time.Minute)
	f.notify("w", rbtype.OutcomeCompleted, `{"answer":"yes"}`, "")
	w, calls = f.advance()
	require.Equal(t, []int64{1}, w.Processed)
	require.Equal(t, []uuid.UUID{id}, w.Finished[rbtype.InvocationCompleted])
	require.Equal(t, []string{"STEP_RESUMED w", "STEP_SUCCEEDED w", "STEP_STARTED e"}, eventNames(w.Events))
	require.Len(t, w.Receipts, 1, "human_process is a side effect: the result is kept under the key")
	require.Equal(t, map[string]any{"got": "yes"}, callFor(t, calls, "e").Call.Args)
}

// parked → failed: a notification that reports failure fails the step
// with its code; a retryable code retries (a new attempt, a new
// invocation).
func TestMachineFailedNotification(t *testing.T) {
	f := newFixture(t, `(m.wait :as @w)`, nil)
	_, calls := f.advance()
	f.advance(parked(callFor(t, calls, "w"), ""))
	f.notify("w", rbtype.OutcomeFailed, ``, rbtype.CodePolicyDenied)
	w, _ := f.advance()
	require.Equal(t, rbtype.StepFailed, f.step("w").Status)
	require.Equal(t, rbtype.CodePolicyDenied, f.step("w").ErrorCode)
	require.Equal(t, []string{"STEP_RESUMED w", "STEP_FAILED w", "RUNBOOK_FAILED"}, eventNames(w.Events))
}

// parked → failed or escalated: a park past its timeout times out as its
// verb's on_timeout says.
func TestMachineParkTimeouts(t *testing.T) {
	for _, tc := range []struct {
		verb    string
		step    rbtype.StepStatus
		runbook rbtype.RunbookStatus
		events  []string
	}{
		{"m.wait", rbtype.StepFailed, rbtype.RunbookFailed, []string{"STEP_TIMED_OUT w", "STEP_FAILED w", "RUNBOOK_FAILED"}},
		{"m.wait-escalate", rbtype.StepEscalated, rbtype.RunbookEscalated, []string{"STEP_TIMED_OUT w", "RUNBOOK_ESCALATED"}},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			f := newFixture(t, `(`+tc.verb+` :as @w)`, nil)
			_, calls := f.advance()
			f.advance(parked(callFor(t, calls, "w"), ""))
			f.now = f.now.Add(59 * time.Minute)
			w, _ := f.advance()
			require.Empty(t, w.Events, "not yet")
			f.now = f.now.Add(time.Minute)
			w, _ = f.advance()
			require.Equal(t, tc.events, eventNames(w.Events))
			require.Equal(t, tc.step, f.step("w").Status)
			require.Equal(t, rbtype.CodeParkTimeout, f.step("w").ErrorCode)
			require.Equal(t, tc.runbook, f.rb.Status)
			require.Len(t, w.Finished[rbtype.InvocationTimedOut], 1)
			// A notification after the timeout finds nothing to resume.
			f.notify("w", rbtype.OutcomeCompleted, `{}`, "")
			w, _ = f.advance()
			require.Empty(t, w.Processed)
		})
	}
}

// A timer parks until its time and completes itself then.
func TestMachineTimerCompletesAtItsTime(t *testing.T) {
	f := newFixture(t, `(m.sleep :as @z)`, nil)
	f.advance()
	until := f.now.Add(10 * time.Minute)
	w, _ := f.advance(&machine.Outcome{RunbookID: f.rb.ID, StepID: f.step("z").ID, Attempt: 1, Result: handler.ParkedUntil(until)})
	require.Len(t, w.InvocationUpdates, 1)
	require.Equal(t, until, *w.InvocationUpdates[0].TimeoutAt)
	require.True(t, f.rb.WakeAt.Equal(until))
	f.now = until
	w, _ = f.advance()
	require.Equal(t, []string{"STEP_RESUMED z", "STEP_SUCCEEDED z", "RUNBOOK_COMPLETED"}, eventNames(w.Events))
	require.Equal(t, machine.StepResumedData{CorrelationKey: f.invs[*f.step("z").InvocationID].CorrelationKey, Timer: true},
		eventData[machine.StepResumedData](t, w.Events, "STEP_RESUMED z"))
	require.Len(t, w.Finished[rbtype.InvocationCompleted], 1)
}

// ready → waiting_approval → ready: a gated step waits for a decision;
// other branches go on. An approval lets it run; a rejection fails it
// with POLICY_DENIED.
func TestMachineGates(t *testing.T) {
	for _, approve := range []bool{true, false} {
		f := newFixture(t, `(m.approve :what "wire" :as @g) (m.echo :v 1 :as @free)`, nil)
		w, calls := f.advance()
		require.Equal(t, rbtype.StepWaitingApproval, f.step("g").Status)
		require.Equal(t, machine.GateRequestedData{Gate: rbtype.GateHumanConfirm}, eventData[machine.GateRequestedData](t, w.Events, "GATE_REQUESTED g"))
		require.Contains(t, eventNames(w.Events), "STEP_READY g", "a step that waits keeps its STEP_READY")
		require.Len(t, callsFor(calls, "free"), 1, "other branches go on")

		_, _, err := f.command(&machine.DecideGate{Step: "free", Approve: approve, By: "ops"})
		require.ErrorIs(t, err, rbtype.ErrConflict, "only a waiting step can be decided")
		_, _, err = f.command(&machine.DecideGate{Step: "nope", Approve: approve, By: "ops"})
		require.ErrorIs(t, err, rbtype.ErrNotFound)

		w, calls, err = f.command(&machine.DecideGate{Step: "g", Approve: approve, By: "ops", Comment: "looks right"})
		require.NoError(t, err)
		require.Equal(t, machine.GateDecidedData{By: "ops", Comment: "looks right"}, eventData[machine.GateDecidedData](t, w.Events, map[bool]string{true: "GATE_APPROVED g", false: "GATE_REJECTED g"}[approve]))
		if approve {
			require.Equal(t, []string{"GATE_APPROVED g", "STEP_STARTED g"}, eventNames(w.Events), "approved: it starts in the same transaction")
			require.Len(t, callsFor(calls, "g"), 1)
			require.Equal(t, rbtype.StepRunning, f.step("g").Status)
			continue
		}
		require.Equal(t, rbtype.StepFailed, f.step("g").Status)
		require.Equal(t, rbtype.CodePolicyDenied, f.step("g").ErrorCode)
		require.Equal(t, "rejected by ops", f.step("g").ErrorMessage)
		require.Equal(t, []string{"GATE_REJECTED g", "STEP_FAILED g"}, eventNames(w.Events))
	}
}

// Where no worker runs (rbd --worker=false), an approved step is left
// ready for the workers, who are signalled.
func TestMachineApprovalWithoutAWorkerHere(t *testing.T) {
	f := newFixture(t, `(m.approve :what "wire" :as @g)`, nil)
	f.advance()
	w, err := f.heldCommand(&machine.DecideGate{Step: "g", Approve: true, By: "ops"})
	require.NoError(t, err)
	require.Equal(t, []string{"GATE_APPROVED g"}, eventNames(w.Events))
	require.Empty(t, w.Leases)
	require.Equal(t, rbtype.StepReady, f.step("g").Status)
	require.Equal(t, 1, f.signalled, "the workers are told")
	require.Equal(t, f.now, *f.rb.WakeAt)
	w, calls := f.advance()
	require.Equal(t, []string{"STEP_STARTED g"}, eventNames(w.Events))
	require.Len(t, callsFor(calls, "g"), 1)
}

// A dry run previews: gates do not hold it, a step with side effects and
// no dry-run handler is simulated, and a durable step does not park.
func TestMachineDryRun(t *testing.T) {
	f := newFixture(t, `(m.approve :what "wire" :as @g) (m.wait :after @g :as @w) (m.echo :v 1 :as @pure)`, nil).dryRun()
	w, calls := f.advance()
	require.NotContains(t, eventNames(w.Events), "GATE_REQUESTED g", "a dry run asks no one")
	g := callFor(t, calls, "g")
	require.True(t, g.DryRun, "core.echo can dry-run: its dry run is called, not its call")
	require.Len(t, callsFor(calls, "pure"), 1, "a step without side effects really runs")
	require.Empty(t, w.NewInvocations)
	w, _ = f.advance(succeed(g, map[string]any{"what": "wire"}), succeed(callFor(t, calls, "pure"), map[string]any{"v": 1}))
	require.Equal(t, rbtype.StepComplete, f.step("g").Status)
	require.True(t, f.step("g").Simulated)
	// m.wait's handler cannot dry-run: it is simulated without a call.
	require.True(t, f.step("w").Simulated, "a durable step does not park in a dry run")
	require.Empty(t, w.NewInvocations)
	require.Empty(t, f.receipts, "a dry run keeps no receipts")
}

// Cancel: every step not yet final is cancelled with its event, active
// invocations are cancelled, completed work stays; a finished runbook is a
// conflict.
func TestMachineCancel(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @done) (m.wait :after @done :as @w) (m.echo :after @w :as @later)`, nil)
	_, calls := f.advance()
	_, calls = f.advance(succeed(callFor(t, calls, "done"), map[string]any{"v": 1}))
	f.advance(parked(callFor(t, calls, "w"), ""))
	c := &machine.CancelRunbook{By: "ops"}
	w, calls, err := f.command(c)
	require.NoError(t, err)
	require.Empty(t, calls)
	require.Equal(t, []string{"STEP_CANCELLED w", "STEP_CANCELLED later", "RUNBOOK_CANCELLED"}, eventNames(w.Events))
	require.Equal(t, machine.RunbookCancelledData{By: "ops"}, eventData[machine.RunbookCancelledData](t, w.Events, "RUNBOOK_CANCELLED"))
	require.Len(t, w.Finished[rbtype.InvocationCancelled], 1)
	require.Len(t, c.Waits, 1, "the wait it cancelled, for the request to stop it")
	require.Equal(t, map[string]rbtype.StepStatus{"done": rbtype.StepComplete, "w": rbtype.StepCancelled, "later": rbtype.StepCancelled}, f.statuses())
	require.Equal(t, rbtype.RunbookCancelled, f.rb.Status)
	require.Equal(t, rbtype.CodeCancelled, f.rb.ErrorCode)
	require.NotNil(t, f.rb.FinishedAt)
	require.Nil(t, f.rb.WakeAt)

	// Later notifications are kept and ignored; the runbook stays put.
	f.notify("w", rbtype.OutcomeCompleted, `{}`, "")
	w, _ = f.advance()
	require.Empty(t, w.Processed)
	require.Empty(t, w.Events)

	// Cancelling again changes nothing; a finished runbook is a conflict.
	w, _, err = f.command(&machine.CancelRunbook{By: "ops"})
	require.NoError(t, err)
	require.Empty(t, w.Events)
	done := newFixture(t, `(m.echo :v 1 :as @a)`, nil)
	_, calls = done.advance()
	done.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": 1}))
	_, _, err = done.command(&machine.CancelRunbook{By: "ops"})
	require.ErrorIs(t, err, rbtype.ErrConflict)
}

// A cancel while a call is out: the step is cancelled at once, the call's
// outcome is dropped when it returns, and the runbook is woken when the
// call's lease would expire, not before (a dead worker's lease ends only
// in an advance after it expired).
func TestMachineCancelWhileACallIsOut(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s)`, nil)
	_, calls := f.advance()
	lease := f.leases[f.step("s").ID]
	_, _, err := f.command(&machine.CancelRunbook{By: "ops"})
	require.NoError(t, err)
	require.Equal(t, rbtype.StepCancelled, f.step("s").Status)
	require.Equal(t, lease.ExpiresAt, *f.rb.WakeAt)
	w, _ := f.advance(succeed(callFor(t, calls, "s"), map[string]any{}))
	require.Empty(t, w.Events, "the outcome of a cancelled step is dropped")
	require.Equal(t, []int64{f.step("s").ID}, w.EndLeases, "and its lease ends")
	require.Empty(t, w.Receipts)
}

// Compensation: when a runbook fails, the completed steps whose verbs
// declare a compensation are undone one at a time, newest first, each
// from its own arguments; a failed compensation is recorded and the next
// still runs.
func TestMachineCompensatesInReverseOrder(t *testing.T) {
	f := newFixture(t, `
(m.reserve :what "car" :as @car)
(m.reserve :what "hotel" :after @car :as @hotel)
(m.send :to "x" :after @hotel :as @pay)`, nil)
	_, calls := f.advance()
	_, calls = f.advance(succeed(callFor(t, calls, "car"), map[string]any{"id": "c1"}))
	_, calls = f.advance(succeed(callFor(t, calls, "hotel"), map[string]any{"id": "h1"}))
	w, calls := f.advance(failWith(callFor(t, calls, "pay"), rbtype.CodePolicyDenied))
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Nil(t, f.rb.FinishedAt, "not finished while compensations are to run")
	require.ElementsMatch(t, []string{"car", "hotel"}, w.Compensate[f.rb.ID])
	require.Empty(t, calls)

	// The newest completion first: hotel, with its own arguments.
	w, calls = f.advance()
	hotel := callFor(t, calls, "hotel")
	require.Equal(t, machine.CallCompensation, hotel.Purpose)
	require.Equal(t, "m.undo", hotel.Call.Verb)
	require.Equal(t, map[string]any{"what": "hotel"}, hotel.Call.Args)
	require.Equal(t, machine.CompensationStartedData{Verb: "m.undo"}, eventData[machine.CompensationStartedData](t, w.Events, "COMPENSATION_STARTED hotel"))
	require.Len(t, calls, 1, "one at a time")

	w, calls = f.advance(failWith(hotel, rbtype.CodeAuthForbidden))
	require.Equal(t, rbtype.CompensationFailed, f.step("hotel").CompensationStatus)
	require.Equal(t, "AUTH_FORBIDDEN: failed with AUTH_FORBIDDEN", f.step("hotel").CompensationError)
	car := callFor(t, calls, "car")
	require.Equal(t, map[string]any{"what": "car"}, car.Call.Args)
	require.Contains(t, eventNames(w.Events), "COMPENSATION_FAILED hotel")

	w, calls = f.advance(succeed(car, map[string]any{"undone": true}))
	require.Empty(t, calls)
	require.Equal(t, rbtype.CompensationComplete, f.step("car").CompensationStatus)
	require.Equal(t, []string{"COMPENSATION_SUCCEEDED car"}, eventNames(w.Events))
	require.Len(t, w.Receipts, 1)
	require.Equal(t, "car:compensate", w.Receipts[0].StepKey)
	require.NotNil(t, f.rb.FinishedAt, "finished once every compensation ran")
}

// Extend: new calls compile against the runbook's frozen plan and may use
// its steps' results; the change appends steps and edges, logs the
// mutation, and bumps the version. An edge into an existing step is a
// conflict.
func TestMachineExtend(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @a)`, nil)
	_, calls := f.advance()
	f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": 1}))
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)

	f2 := newFixture(t, `(m.echo :v 1 :as @a) (m.wait :as @w)`, nil)
	_, calls = f2.advance()
	f2.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": 1}), parked(callFor(t, calls, "w"), ""))
	e := &Engine{cfg: Config{Catalogue: f2.cat, Limits: f2.m.Limits}, machine: machine.Machine{Policy: func() *policy.Policy { return f2.pol }}}
	rb := *f2.rb
	rb.Plan = f2.plan.Plan.JSON()
	rb.Version = 1
	ext, err := e.compileExtension(context.Background(), &rb, Extension{Filename: "more.rbk", Source: []byte(`(m.send :to @a.v :as @b)`)})
	require.NoError(t, err)
	f2.rb.Version = 1
	w, _, err := f2.command(&machine.ExtendRunbook{Ext: ext, Actor: "agent"})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, ext.Keys)
	require.Len(t, w.NewSteps[f2.rb.ID], 1)
	require.Equal(t, 3, w.NewSteps[f2.rb.ID][0].Position)
	require.Equal(t, []driver.Edge{{From: "a", To: "b", Kind: "data"}}, w.NewEdges[f2.rb.ID])
	require.Equal(t, 2, f2.rb.Version)
	require.Equal(t, ext.Plan.PlanHash, f2.rb.PlanHash)
	require.Equal(t, rbtype.MutationExtend, f2.mutations[0].Kind)
	require.Equal(t, machine.RunbookExtendedData{Source: "more.rbk", Steps: []string{"b"}, PlanHash: ext.Plan.PlanHash, Version: 2, PolicyHash: ext.PolicyHash},
		eventData[machine.RunbookExtendedData](t, w.Events, "RUNBOOK_EXTENDED"))
	require.Equal(t, f2.now, *f2.rb.WakeAt, "due at once: its new steps are to be looked at")
	_, _, err = f2.command(&machine.ExtendRunbook{Ext: ext, Actor: "agent"})
	require.ErrorIs(t, err, machine.ErrExtendedMeanwhile, "compiled against a version that is no longer the runbook's")

	// The new step runs with the old step's result.
	f2.plan = machine.NewPlanInfo(ext.Plan)
	_, calls = f2.advance()
	require.Equal(t, map[string]any{"to": json.Number("1")}, callFor(t, calls, "b").Call.Args)

	// A finished runbook cannot grow; a call that would add an edge into
	// an existing step is refused.
	done := *f.rb
	done.Plan = f.plan.Plan.JSON()
	_, err = e.compileExtension(context.Background(), &done, Extension{Filename: "x.rbk", Source: []byte(`(m.echo :v 2)`)})
	require.ErrorIs(t, err, rbtype.ErrConflict)
	_, err = e.compileExtension(context.Background(), &rb, Extension{Filename: "x.rbk", Source: []byte(`(m.echo :v 2 :as @z) (m.echo :after @z :as @a)`)})
	require.Error(t, err)
}

// The events a transition writes carry their typed data, and a step's
// STEP_SUCCEEDED from a handler has none.
func TestMachineEventDataEncodes(t *testing.T) {
	e, err := machine.NewEvent(uuid.Nil, rbtype.EventStepSucceeded, "w", &driver.Step{Key: "s", StepState: driver.StepState{Attempt: 2}}, machine.StepSucceededData{})
	require.NoError(t, err)
	require.Nil(t, e.Data, "an empty object is left out")
	require.Equal(t, 2, e.Attempt)
	e, err = machine.NewEvent(uuid.Nil, rbtype.EventStepFailed, "w", nil, machine.StepFailedData{Code: rbtype.CodeInternal, Message: "x"})
	require.NoError(t, err)
	require.JSONEq(t, `{"code":"INTERNAL","message":"x"}`, string(e.Data))
	_, err = machine.NewEvent(uuid.Nil, rbtype.EventStepFailed, "w", nil, json.RawMessage(`{not json`))
	require.Error(t, err, "an encoding error is returned, not dropped")
}

// The failure modes of docs/design/semantics.md section 5 on one diamond: b fails for
// good while c waits on the outside world; d reads b's result, e only runs
// after b and c.
func TestMachineFailureModesOnADiamond(t *testing.T) {
	const diamond = `
(m.echo :v "x" :as @a)
(m.send :to @a.v :on-failure "%s" :as @b)
(m.wait :after @a :as @c)
(m.echo :got @b.to :after @c :as @d)
(m.echo :v "e" :after [@b @c] :as @e)`
	for _, tc := range []struct {
		mode rbtype.OnFailure
		// right after b fails
		after map[string]rbtype.StepStatus
		// once c's notification has come (when c is still parked)
		end     map[string]rbtype.StepStatus
		runbook rbtype.RunbookStatus
	}{
		{rbtype.OnFailureAbort,
			map[string]rbtype.StepStatus{"a": "complete", "b": "failed", "c": "cancelled", "d": "skipped", "e": "skipped"},
			nil, rbtype.RunbookFailed},
		{rbtype.OnFailureIsolate,
			map[string]rbtype.StepStatus{"a": "complete", "b": "failed", "c": "parked", "d": "skipped", "e": "skipped"},
			map[string]rbtype.StepStatus{"a": "complete", "b": "failed", "c": "complete", "d": "skipped", "e": "skipped"},
			rbtype.RunbookFailed},
		{rbtype.OnFailureContinue,
			map[string]rbtype.StepStatus{"a": "complete", "b": "failed", "c": "parked", "d": "skipped", "e": "pending"},
			map[string]rbtype.StepStatus{"a": "complete", "b": "failed", "c": "complete", "d": "skipped", "e": "complete"},
			rbtype.RunbookPartial},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			f := newFixture(t, fmt.Sprintf(diamond, tc.mode), nil)
			require.Equal(t, tc.mode, f.plan.Steps["b"].OnFailure, "the call's :on-failure is frozen into the step")
			_, calls := f.advance()
			_, calls = f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": "x"}))
			c := callFor(t, calls, "c")
			w, _ := f.advance(failWith(callFor(t, calls, "b"), rbtype.CodePolicyDenied), parked(c, ""))
			require.Equal(t, tc.after, f.statuses())
			if tc.end == nil {
				require.Equal(t, tc.runbook, f.rb.Status)
				require.Len(t, w.Finished[rbtype.InvocationCancelled], 1, "abort cancels the wait")
				require.Equal(t, machine.StepSkippedData{Because: "b", Status: rbtype.StepFailed, Aborted: true},
					eventData[machine.StepSkippedData](t, w.Events, "STEP_CANCELLED c"))
				// A notification for the cancelled wait is kept and ignored.
				f.notify("c", rbtype.OutcomeCompleted, `{}`, "")
				w, _ = f.advance()
				require.Empty(t, w.Processed)
				return
			}
			require.Equal(t, rbtype.RunbookExecuting, f.rb.Status, "c still waits")
			f.notify("c", rbtype.OutcomeCompleted, `{}`, "")
			_, calls = f.advance()
			if e := callsFor(calls, "e"); len(e) > 0 {
				f.advance(succeed(e[0], map[string]any{"v": "e"}))
			}
			require.Equal(t, tc.end, f.statuses())
			require.Equal(t, tc.runbook, f.rb.Status)
			require.NotNil(t, f.rb.FinishedAt)
		})
	}
}

// Under abort a running call is recorded when it returns, but a failure
// is not retried and a reclaimed call is not made again.
func TestMachineAbortLetsRunningCallsFinishButStartsNothing(t *testing.T) {
	f := newFixture(t, `
(m.echo :v 1 :on-failure "abort" :as @a)
(m.send :to "x" :as @b)
(m.send :to "y" :as @c)
(m.echo :after @b :as @later)`, nil)
	_, calls := f.advance()
	a, b, c := callFor(t, calls, "a"), callFor(t, calls, "b"), callFor(t, calls, "c")
	f.advance(failWith(a, rbtype.CodeInvalidInput))
	require.Equal(t, rbtype.StepSkipped, f.step("later").Status)
	require.Equal(t, rbtype.StepRunning, f.step("b").Status, "a call in flight is not cut short")
	require.Equal(t, rbtype.RunbookExecuting, f.rb.Status)

	// b comes back with a retryable failure: under abort it is final.
	w, calls := f.advance(failWith(b, rbtype.CodeRateLimit))
	require.Empty(t, calls)
	require.Equal(t, rbtype.StepFailed, f.step("b").Status)
	require.NotContains(t, eventNames(w.Events), "STEP_RETRY_SCHEDULED b")

	// c's worker died: the call is not made again.
	f.now = f.now.Add(31 * time.Second)
	w, calls = f.advance()
	require.Empty(t, calls)
	require.Equal(t, rbtype.StepCancelled, f.step("c").Status)
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Contains(t, eventNames(w.Events), "RUNBOOK_FAILED")
	_ = c
}

// Retry: a failed runbook's failed and skipped steps go back to pending,
// attempts continue and keys stay; the runbook runs again and completes.
// Named steps take their skipped descendants with them. A complete
// runbook is a conflict.
func TestMachineRetry(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @s) (m.echo :after @s :as @next) (m.echo :v 2 :as @other)`, nil)
	_, calls := f.advance()
	first := callFor(t, calls, "s")
	f.advance(failWith(first, rbtype.CodePolicyDenied), succeed(callFor(t, calls, "other"), map[string]any{"v": 2}))
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	require.Equal(t, rbtype.StepSkipped, f.step("next").Status)

	_, _, err := f.command(&machine.RetryRunbook{O: machine.RetryOptions{Steps: []string{"other"}, By: "ops"}})
	require.ErrorIs(t, err, rbtype.ErrConflict, "a complete step is not retried")
	_, _, err = f.command(&machine.RetryRunbook{O: machine.RetryOptions{Steps: []string{"nope"}, By: "ops"}})
	require.ErrorIs(t, err, rbtype.ErrNotFound)

	c := &machine.RetryRunbook{O: machine.RetryOptions{Steps: []string{"s"}, By: "ops"}}
	w, calls, err := f.command(c)
	require.NoError(t, err)
	require.Equal(t, []string{"s", "next"}, c.Keys, "the named step takes its skipped dependent with it")
	require.Equal(t, machine.RunbookRetriedData{Steps: c.Keys, By: "ops"}, eventData[machine.RunbookRetriedData](t, w.Events, "RUNBOOK_RETRIED"))
	require.Equal(t, []string{"RUNBOOK_RETRIED", "STEP_STARTED s"}, eventNames(w.Events), "it starts in the same transaction")
	require.Equal(t, rbtype.MutationRetry, f.mutations[0].Kind)
	require.Equal(t, rbtype.RunbookExecuting, f.rb.Status)
	require.Nil(t, f.rb.FinishedAt)
	require.Equal(t, rbtype.StepPending, f.step("next").Status)
	require.Empty(t, f.step("s").ErrorCode)

	again := callFor(t, calls, "s")
	require.Equal(t, 2, again.Attempt, "attempts continue")
	require.Equal(t, first.Call.IdempotencyKey, again.Call.IdempotencyKey, "the key stays: an effect that happened returns its receipt")
	_, calls = f.advance(succeed(again, map[string]any{"sent": true}))
	f.advance(succeed(callFor(t, calls, "next"), map[string]any{}))
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
	require.NotNil(t, f.rb.FinishedAt)

	_, _, err = f.command(&machine.RetryRunbook{O: machine.RetryOptions{By: "ops"}})
	require.ErrorIs(t, err, rbtype.ErrConflict, "a complete runbook is not retried")
}

// A runbook held open does not finish when its steps do; an extension
// adds to it; once closed it finishes as its steps ended. Only a
// held-open runbook can be closed.
func TestMachineHoldOpenAndClose(t *testing.T) {
	f := newFixture(t, `(m.echo :v 1 :as @a)`, nil)
	f.rb.Status = rbtype.RunbookInProgress
	_, calls := f.advance()
	w, _ := f.advance(succeed(callFor(t, calls, "a"), map[string]any{"v": 1}))
	require.Equal(t, []string{"STEP_SUCCEEDED a"}, eventNames(w.Events), "no RUNBOOK_COMPLETED while held open")
	require.Equal(t, rbtype.RunbookInProgress, f.rb.Status)
	require.Nil(t, f.rb.FinishedAt)

	e := &Engine{cfg: Config{Catalogue: f.cat, Limits: f.m.Limits}}
	rb := *f.rb
	rb.Plan = f.plan.Plan.JSON()
	ext, err := e.compileExtension(context.Background(), &rb, Extension{Filename: "more.rbk", Source: []byte(`(m.echo :v @a.v :as @b)`)})
	require.NoError(t, err, "an in_progress runbook can be extended")
	_, _, err = f.command(&machine.ExtendRunbook{Ext: ext, Actor: "agent"})
	require.NoError(t, err)
	f.plan = machine.NewPlanInfo(ext.Plan)
	_, calls = f.advance()
	f.advance(succeed(callFor(t, calls, "b"), map[string]any{"v": 1}))
	require.Equal(t, rbtype.RunbookInProgress, f.rb.Status)

	w, _, err = f.command(&machine.CloseRunbook{By: "agent"})
	require.NoError(t, err)
	require.Equal(t, machine.RunbookClosedData{By: "agent"}, eventData[machine.RunbookClosedData](t, w.Events, "RUNBOOK_CLOSED"))
	require.Equal(t, rbtype.MutationClose, f.mutations[len(f.mutations)-1].Kind)
	require.Equal(t, []string{"RUNBOOK_CLOSED", "RUNBOOK_COMPLETED"}, eventNames(w.Events), "it settles in the same transaction")
	require.Equal(t, rbtype.RunbookComplete, f.rb.Status)

	_, _, err = f.command(&machine.CloseRunbook{By: "agent"})
	require.ErrorIs(t, err, rbtype.ErrConflict, "a finished runbook cannot be closed")
}

// A heartbeat moves a park's timeout forward, never back and never past
// parked_at + max_park (4 × park_timeout by default); an ended wait takes
// none.
func TestMachineHeartbeat(t *testing.T) {
	f := newFixture(t, `(m.wait :as @w)`, nil)
	require.Equal(t, 4*time.Hour, f.plan.Steps["w"].Execution.Timeouts.MaxParkOrDefault())
	_, calls := f.advance()
	f.advance(parked(callFor(t, calls, "w"), ""))
	inv := f.invs[*f.step("w").InvocationID]
	beat := func(extend string) (driver.AdvanceWrite, time.Time, error) {
		c := &machine.Heartbeat{Key: inv.CorrelationKey, Extend: verbs.MustDuration(extend)}
		w, _, err := f.command(c)
		return w, c.Timeout, err
	}

	f.now = f.now.Add(30 * time.Minute)
	w, at, err := beat("PT2H")
	require.NoError(t, err)
	require.Equal(t, f.now.Add(2*time.Hour), at)
	require.Equal(t, []driver.InvocationUpdate{{ID: inv.InvocationID, TimeoutAt: &at}}, w.InvocationUpdates)
	require.Equal(t, machine.StepHeartbeatData{CorrelationKey: inv.CorrelationKey, Extend: "PT2H", TimeoutAt: at},
		eventData[machine.StepHeartbeatData](t, w.Events, "STEP_HEARTBEAT w"))
	require.Equal(t, at, *f.rb.WakeAt, "the runbook wakes at the new timeout")

	_, at, err = beat("P3D")
	require.NoError(t, err)
	require.Equal(t, inv.ParkedAt.Add(4*time.Hour), at, "clamped at parked_at + max_park")

	_, at, err = beat("PT1M")
	require.NoError(t, err)
	require.Equal(t, inv.ParkedAt.Add(4*time.Hour), at, "never brought closer")

	f.notify("w", rbtype.OutcomeCompleted, `{}`, "")
	f.advance()
	_, _, err = beat("PT1H")
	require.ErrorIs(t, err, rbtype.ErrConflict, "an ended wait takes no heartbeat")
}

// Resolving an escalated step: complete lets its dependents run, retry
// parks it again under a new attempt, fail fails it; each reopens the
// runbook the escalation had ended.
func TestMachineResolve(t *testing.T) {
	escalated := func(t *testing.T) *fixture {
		f := newFixture(t, `(m.wait-escalate :as @w) (m.echo :after @w :as @next)`, nil)
		_, calls := f.advance()
		f.advance(parked(callFor(t, calls, "w"), ""))
		f.now = f.now.Add(time.Hour)
		f.advance()
		require.Equal(t, rbtype.RunbookEscalated, f.rb.Status)
		require.Equal(t, rbtype.StepSkipped, f.step("next").Status)
		return f
	}
	t.Run("complete", func(t *testing.T) {
		f := escalated(t)
		w, calls, err := f.command(&machine.ResolveStep{Step: "w", R: machine.Resolution{Action: machine.ResolveComplete, Result: json.RawMessage(`{"answer":"by hand"}`), By: "ops"}})
		require.NoError(t, err)
		require.Equal(t, []string{"STEP_RESOLVED w", "STEP_SUCCEEDED w", "STEP_STARTED next"}, eventNames(w.Events),
			"what the escalation skipped runs, from the same transaction")
		require.Equal(t, machine.StepResolvedData{Action: machine.ResolveComplete, By: "ops"}, eventData[machine.StepResolvedData](t, w.Events, "STEP_RESOLVED w"))
		require.Equal(t, rbtype.MutationResolve, f.mutations[0].Kind)
		require.Equal(t, rbtype.RunbookExecuting, f.rb.Status)
		f.advance(succeed(callFor(t, calls, "next"), map[string]any{}))
		require.Equal(t, rbtype.RunbookComplete, f.rb.Status)
		require.JSONEq(t, `{"answer":"by hand"}`, string(f.step("w").Result))
	})
	t.Run("retry", func(t *testing.T) {
		f := escalated(t)
		w, calls, err := f.command(&machine.ResolveStep{Step: "w", R: machine.Resolution{Action: machine.ResolveRetry, By: "ops"}})
		require.NoError(t, err)
		again := callFor(t, calls, "w")
		require.Equal(t, 2, again.Attempt)
		require.Len(t, w.NewInvocations, 1)
		id, key := f.m.Keys.InvocationIDs(f.rb.ID, "w", 2)
		require.Equal(t, id, w.NewInvocations[0].InvocationID, "parks again under a new attempt")
		require.Equal(t, key, again.Call.CorrelationKey)
	})
	t.Run("fail", func(t *testing.T) {
		f := escalated(t)
		w, _, err := f.command(&machine.ResolveStep{Step: "w", R: machine.Resolution{Action: machine.ResolveFail, By: "ops"}})
		require.NoError(t, err)
		require.Equal(t, rbtype.StepFailed, f.step("w").Status)
		require.Equal(t, rbtype.CodeResolvedFailed, f.step("w").ErrorCode)
		require.Equal(t, []string{"STEP_RESOLVED w", "STEP_FAILED w", "RUNBOOK_FAILED"}, eventNames(w.Events), "settled in the same transaction")
		require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	})
	t.Run("refusals", func(t *testing.T) {
		f := escalated(t)
		_, _, err := f.command(&machine.ResolveStep{Step: "next", R: machine.Resolution{Action: machine.ResolveComplete}})
		require.ErrorIs(t, err, rbtype.ErrConflict, "only an escalated step")
		_, _, err = f.command(&machine.ResolveStep{Step: "w", R: machine.Resolution{Action: "shrug"}})
		require.ErrorIs(t, err, rbtype.ErrInvalid)
		_, _, err = f.command(&machine.ResolveStep{Step: "nope", R: machine.Resolution{Action: machine.ResolveFail}})
		require.ErrorIs(t, err, rbtype.ErrNotFound)
		_, _, err = f.command(&machine.ResolveStep{Step: "w", R: machine.Resolution{Action: machine.ResolveComplete, Result: json.RawMessage(`[1]`)}})
		require.NoError(t, err, "m.wait-escalate has no output_schema: any result")
	})
}

// A runbook with a call out keeps a wake-up no later than its lease
// expires, so that a dead worker's step is found without a lease sweep
// (boundByLeases), and writes its row for it only when it has none that
// early: the one a claim set is kept.
func TestMachineWakeUpCoversTheLeases(t *testing.T) {
	f := newFixture(t, `(m.send :to "x" :as @a) (m.send :to "y" :after @a :as @b)`, nil)
	claimed := f.now.Add(f.m.LeaseTTL) // what ClaimDue leaves, before the advance
	f.rb.WakeAt = &claimed
	w, calls := f.advance()
	require.Empty(t, w.Runbooks, "the claim's wake-up is no later than the lease: the runbook row is not written")
	require.Equal(t, claimed, *f.rb.WakeAt)

	// A later advance (the call's outcome) leases the next step: the
	// claim's wake-up still comes first.
	f.now = f.now.Add(time.Second)
	w, _ = f.advance(succeed(callFor(t, calls, "a"), map[string]any{}))
	require.Equal(t, []string{"b"}, f.leasedKeys(w))
	require.Empty(t, w.Runbooks)

	// Without a wake-up (a resume by notification, say), the advance sets
	// one at the lease's expiry.
	f.rb.WakeAt = nil
	f.now = f.now.Add(time.Second)
	w, _ = f.advance()
	require.Len(t, w.Runbooks, 1)
	require.Equal(t, f.leases[f.step("b").ID].ExpiresAt, *f.rb.WakeAt)

	// A wake-up later than the lease is brought forward to it.
	late := f.now.Add(time.Hour)
	f.rb.WakeAt = &late
	w, _ = f.advance()
	require.Len(t, w.Runbooks, 1)
	require.Equal(t, f.leases[f.step("b").ID].ExpiresAt, *f.rb.WakeAt)
}

// A draft_only runbook calls nothing outside (docs/reliability.md): when it fails,
// a compensation whose verb has external_call side effects is skipped
// with DRAFT_ONLY, not run, and the runbook finishes.
func TestMachineDraftSkipsOutsideCompensations(t *testing.T) {
	f := newFixture(t, `(m.hold :what "room" :as @r) (m.echo :v 1 :after @r :as @next)`, nil)
	f.rb.Mode = rbtype.ModeDraftOnly
	_, calls := f.advance()
	_, calls = f.advance(succeed(callFor(t, calls, "r"), map[string]any{"id": "r1"}))
	f.advance(failWith(callFor(t, calls, "next"), rbtype.CodePolicyDenied))
	require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
	w, calls := f.advance()
	require.Empty(t, calls, "the compensation is not called")
	require.Equal(t, rbtype.CompensationSkipped, f.step("r").CompensationStatus)
	require.Equal(t, "DRAFT_ONLY: a draft_only runbook does not run calls with outside effects", f.step("r").CompensationError)
	require.Equal(t, machine.DraftSkippedData{Reason: rbtype.CodeDraftOnly, Verb: "m.undo"}, eventData[machine.DraftSkippedData](t, w.Events, "COMPENSATION_SKIPPED r"))
	require.NotNil(t, f.rb.FinishedAt, "nothing is left to run")
}
