package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

func TestRetryThenFailSkipsDependentsAndKeepsTheRest(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `
(t.echo :v 1 :as @independent)
(t.flaky :x 1 :as @flaky)
(t.echo :after @flaky :as @dependent)
(t.echo :from @independent.v :as @later)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookFailed)

	require.Equal(t, int32(3), b.rec.flakies.Load(), "max_attempts: 3")
	flaky := step(v, "flaky")
	require.Equal(t, rbtype.StepFailed, flaky.Status)
	require.Equal(t, rbtype.CodeTemporaryProviderError, flaky.Error.Code)
	require.Equal(t, 3, flaky.Attempt)
	require.Equal(t, rbtype.StepSkipped, step(v, "dependent").Status)
	require.Equal(t, rbtype.StepComplete, step(v, "independent").Status)
	require.Equal(t, rbtype.StepComplete, step(v, "later").Status)
	require.Contains(t, v.Outcomes, "independent")
	require.Contains(t, v.Outcomes, "later", "completed work stays readable after the failure")
	require.Equal(t, &apitype.ErrorView{Code: rbtype.CodeTemporaryProviderError, Message: "try later"}, v.Error)

	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	var delays []int64
	for _, e := range events {
		if e.Type == rbtype.EventStepRetryScheduled {
			var d struct {
				Code    rbtype.ErrorCode `json:"code"`
				DelayMS int64            `json:"delay_ms"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &d))
			require.Equal(t, rbtype.CodeTemporaryProviderError, d.Code)
			delays = append(delays, d.DelayMS)
		}
	}
	// base PT0.05S doubling, capped at PT0.2S, plus at most a fifth.
	require.Len(t, delays, 2)
	require.InDelta(t, 55, delays[0], 5)
	require.InDelta(t, 110, delays[1], 10)
	types := b.eventTypes(t, id)
	require.Contains(t, types, "STEP_FAILED flaky")
	require.Contains(t, types, "STEP_SKIPPED dependent")
	require.Equal(t, "RUNBOOK_FAILED", types[len(types)-1])
}

func TestRetryDelayIsDeterministic(t *testing.T) {
	t.Parallel()
	r := verbsRetry()
	require.Equal(t, machine.RetryDelay(r, 42, 2), machine.RetryDelay(r, 42, 2))
	require.NotEqual(t, machine.RetryDelay(r, 42, 2), machine.RetryDelay(r, 1<<60, 2), "jitter depends on the seed")
	for attempt := 1; attempt <= 6; attempt++ {
		d := machine.RetryDelay(r, 7, attempt)
		base := r.Delay(attempt)
		require.GreaterOrEqual(t, d, base)
		require.LessOrEqual(t, d, base+base/5)
	}
}

func TestParkTimeoutFails(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.wait-briefly :as @w) (t.echo :after @w)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookFailed)
	w := step(v, "w")
	require.Equal(t, rbtype.StepFailed, w.Status)
	require.Equal(t, rbtype.CodeParkTimeout, w.Error.Code)
	types := b.eventTypes(t, id)
	require.Contains(t, types, "STEP_PARKED w")
	require.Contains(t, types, "STEP_TIMED_OUT w")
	require.Contains(t, types, "STEP_FAILED w")
	require.Contains(t, types, "STEP_SKIPPED t.echo#2")

	// A notification that comes too late is kept and ignored.
	res, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: correlationKey(t, b, id, "w"), Status: "completed"})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)
}

func TestParkTimeoutEscalates(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.wait-escalate :as @w) (t.echo :v 1)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookEscalated)
	require.Equal(t, rbtype.StepEscalated, step(v, "w").Status)
	require.Equal(t, rbtype.StepComplete, step(v, "t.echo#2").Status)
	require.Equal(t, []apitype.BlockedView{{Step: "w", Reason: string(rbtype.CodeParkTimeout),
		Message: "no notification before the park timeout; escalated to a person"}}, v.BlockedOn)
	types := b.eventTypes(t, id)
	require.Contains(t, types, "STEP_TIMED_OUT w")
	require.NotContains(t, types, "STEP_FAILED w")
	require.Equal(t, "RUNBOOK_ESCALATED", types[len(types)-1])
}

// correlationKey finds a step's correlation key in the ledger.
func correlationKey(t *testing.T, b *testBundle, id any, stepKey string) string {
	t.Helper()
	v, err := b.engine.Get(b.ctx, mustID(id))
	require.NoError(t, err)
	if k := step(v, stepKey).CorrelationKey; k != "" {
		return k
	}
	events, err := b.engine.Events(b.ctx, mustID(id), 0, 0)
	require.NoError(t, err)
	for _, e := range events {
		if e.Type == rbtype.EventStepParked && e.StepKey == stepKey {
			var d struct {
				Key string `json:"correlation_key"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &d))
			return d.Key
		}
	}
	t.Fatalf("step %s never parked", stepKey)
	return ""
}

func TestNotificationResumesAndDuplicatesAreAcknowledged(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.wait :as @w) (t.count :answer @w.answer :as @next)`, nil)
	v := b.waitState(t, id, "parked")
	key := step(v, "w").CorrelationKey
	require.NotEmpty(t, key)
	require.Equal(t, []apitype.BlockedView{{Step: "w", Reason: apitype.BlockedAwaitingNotification, CorrelationKey: key}}, v.BlockedOn)

	// Twenty copies of one notification at once: one resume.
	const copies = 20
	results := make(chan rbtype.InboxResult, copies)
	start := make(chan struct{})
	for range copies {
		go func() {
			<-start
			res, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: "completed", Result: json.RawMessage(`{"answer": "yes"}`)})
			require.NoError(t, err)
			results <- res
		}()
	}
	close(start)
	count := map[rbtype.InboxResult]int{}
	for range copies {
		count[<-results]++
	}
	require.Equal(t, map[rbtype.InboxResult]int{rbtype.InboxAccepted: 1, rbtype.InboxDuplicate: copies - 1}, count)

	v = b.waitStatus(t, id, rbtype.RunbookComplete)
	require.JSONEq(t, `{"answer":"yes"}`, string(v.Outcomes["w"]))
	require.Equal(t, 1, b.rec.callsOf(id, "next"))
	types := b.eventTypes(t, id)
	resumes := 0
	for _, ty := range types {
		if ty == "STEP_RESUMED w" {
			resumes++
		}
	}
	require.Equal(t, 1, resumes)

	// The same key with another payload is refused.
	res, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: "completed", Result: json.RawMessage(`{"answer": "no"}`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxConflict, res)
	// Spacing and key order do not make a payload different.
	res, err = b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: "completed", Result: json.RawMessage(`{ "answer" :"yes" }`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxDuplicate, res)
}

func TestNotificationReportingFailureFailsTheStep(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.wait :as @w)`, nil)
	key := step(b.waitState(t, id, "parked"), "w").CorrelationKey
	_, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: "failed", ErrorCode: rbtype.CodeInvalidInput, ErrorMessage: "bad scan"})
	require.NoError(t, err)
	v := b.waitStatus(t, id, rbtype.RunbookFailed)
	require.Equal(t, &apitype.ErrorView{Code: rbtype.CodeInvalidInput, Message: "bad scan"}, step(v, "w").Error)
}

func TestNotificationBeforeParkIsConsumedAtPark(t *testing.T) {
	b := setup(t)
	// An external system so fast that its answer arrives while the handler
	// that started the work has not yet returned.
	require.NoError(t, b.handlers.Register(specDurable("test.fast-start"), handler.HandlerFunc(
		func(ctx context.Context, c *handler.Call) (handler.Result, error) {
			_, err := b.engine.Notify(ctx, runtime.Notification{CorrelationKey: c.CorrelationKey, Status: "completed", Result: json.RawMessage(`{"fast":true}`)})
			if err != nil {
				return handler.Result{}, err
			}
			return handler.Parked("ext-1"), nil
		})))
	b.extendCatalogue(t, `
- name: fast
  domain: t
  execution:
    kind: durable
    handler: test.fast-start
    side_effects: external_call
    timeouts: {park_timeout: PT1H}`)
	b.run(t)
	id := b.submit(t, `(t.fast :as @f)`, nil)
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	require.JSONEq(t, `{"fast":true}`, string(v.Outcomes["f"]))
	types := b.eventTypes(t, id)
	require.Contains(t, types, "STEP_PARKED f")
	require.Contains(t, types, "STEP_RESUMED f")
}

func TestTimerSleepsAndResumesItself(t *testing.T) {
	b := setup(t)
	b.run(t)
	began := time.Now()
	id := b.submit(t, `(t.sleep :as @s) (t.echo :after @s)`, nil)
	b.waitStatus(t, id, rbtype.RunbookComplete)
	require.GreaterOrEqual(t, time.Since(began), 200*time.Millisecond)
	// The sleep parked and its own timer resumed it, read from the ledger
	// rather than watched: a loaded machine may finish the 0.2 s sleep
	// before a poll sees it parked.
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	var parkedAt, resumedAt time.Time
	for _, e := range events {
		switch {
		case e.StepKey != "s":
		case e.Type == rbtype.EventStepParked:
			parkedAt = e.At
		case e.Type == rbtype.EventStepResumed:
			resumedAt = e.At
		}
	}
	require.False(t, parkedAt.IsZero(), "the sleep parked")
	require.False(t, resumedAt.IsZero(), "its timer resumed it")
	require.True(t, resumedAt.After(parkedAt), "resumed after it parked")
}

func TestGateApproveAndReject(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `
(t.echo :v 1 :as @prep)
(t.approve :after @prep :as @yes)
(t.echo :v 2 :gate "human_confirm" :as @no)
(t.echo :after @no :as @after-no)
(t.echo :v 3 :as @free)`, nil)
	v := b.waitState(t, id, "awaiting_approval")
	var blocked []string
	for _, b := range v.BlockedOn {
		blocked = append(blocked, b.Step+" "+b.Reason+" why "+b.Gate.Why)
	}
	require.ElementsMatch(t, []string{"yes REQUIRES_APPROVAL why verb", "no REQUIRES_APPROVAL why call"}, blocked)
	require.Equal(t, rbtype.StepComplete, step(v, "free").Status, "only the gated steps wait")

	err := b.engine.Decide(b.ctx, id, "prep", true, "ops", "")
	require.ErrorIs(t, err, rbtype.ErrConflict, "prep does not wait for approval")
	err = b.engine.Decide(b.ctx, id, "nope", true, "ops", "")
	require.ErrorIs(t, err, rbtype.ErrNotFound)

	require.NoError(t, b.engine.Decide(b.ctx, id, "yes", true, "alice", "looks right"))
	require.NoError(t, b.engine.Decide(b.ctx, id, "no", false, "bob", "not today"))
	v = b.waitStatus(t, id, rbtype.RunbookFailed)
	yes := step(v, "yes")
	require.Equal(t, rbtype.StepComplete, yes.Status)
	require.Equal(t, rbtype.GateApproved, yes.GateDecision.Decision)
	require.Equal(t, "alice", yes.GateDecision.By)
	require.Equal(t, "looks right", yes.GateDecision.Comment)
	no := step(v, "no")
	require.Equal(t, rbtype.StepFailed, no.Status)
	require.Equal(t, rbtype.CodePolicyDenied, no.Error.Code)
	require.Equal(t, rbtype.StepSkipped, step(v, "after-no").Status)
	types := b.eventTypes(t, id)
	for _, want := range []string{"GATE_REQUESTED yes", "GATE_REQUESTED no", "GATE_APPROVED yes", "GATE_REJECTED no", "STEP_FAILED no", "STEP_SUCCEEDED yes"} {
		require.Contains(t, types, want)
	}
}

func TestCancelWhileParked(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.echo :v 1 :as @done) (t.wait :after @done :as @w) (t.echo :after @w :as @after)`, nil)
	v := b.waitState(t, id, "parked")
	require.Equal(t, rbtype.StepParked, step(v, "w").Status, "the step to cancel is really parked")
	key := step(v, "w").CorrelationKey
	require.NoError(t, b.engine.Cancel(b.ctx, id, "carol"))
	require.NoError(t, b.engine.Cancel(b.ctx, id, "carol"), "cancelling twice is harmless")
	v, err := b.engine.Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookCancelled, v.Status)
	require.Equal(t, rbtype.StepComplete, step(v, "done").Status, "completed work stays")
	require.Equal(t, rbtype.StepCancelled, step(v, "w").Status)
	require.Equal(t, rbtype.StepCancelled, step(v, "after").Status)
	require.Contains(t, v.Outcomes, "done")

	// A late notification is kept and ignored.
	res, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: "completed"})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)
	n, err := b.store.Notification(b.ctx, key)
	require.NoError(t, err)
	require.Equal(t, rbtype.NotificationIgnored, n.Status)
	inv, err := b.store.Invocation(b.ctx, key)
	require.NoError(t, err)
	require.Equal(t, rbtype.InvocationCancelled, inv.Status)

	types := b.eventTypes(t, id)
	require.Contains(t, types, "STEP_CANCELLED w")
	require.Contains(t, types, "STEP_CANCELLED after")
	require.Equal(t, "RUNBOOK_CANCELLED", types[len(types)-1])
}

// Cancelling a runbook that has finished is a conflict, and changes
// nothing. (The runbook is waited for first: a test that cancelled a fresh
// submission raced its only step, and failed about one run in four.)
func TestCancelFinishedIsAConflict(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.echo :v 9 :as @only)`, nil)
	b.waitStatus(t, id, rbtype.RunbookComplete)
	require.ErrorIs(t, b.engine.Cancel(b.ctx, id, "x"), rbtype.ErrConflict)
	v, err := b.engine.Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.Equal(t, rbtype.StepComplete, step(v, "only").Status)
}

func TestCompensationRunsInReverseAndRecordsFailures(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `
(t.reserve :what "flight" :as @flight)
(t.reserve-badly :what "hotel" :after @flight :as @hotel)
(t.reserve :what "car" :after @hotel :as @car)
(t.fail :after @car)`, nil)
	v := b.waitFor(t, id, "compensated", func(v *apitype.RunbookView) bool {
		return v.Status == rbtype.RunbookFailed && v.FinishedAt != nil
	})
	require.Equal(t, []string{"car", "flight"}, b.rec.undone, "undone in reverse order of completion; the hotel's undo failed")
	require.Equal(t, &apitype.Compensation{Status: "complete"}, step(v, "car").Compensation)
	require.Equal(t, &apitype.Compensation{Status: "failed", Error: "AUTH_FORBIDDEN: cannot undo hotel"}, step(v, "hotel").Compensation)
	require.Equal(t, &apitype.Compensation{Status: "complete"}, step(v, "flight").Compensation)
	var order []string
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	for _, e := range events {
		switch e.Type {
		case rbtype.EventCompensationStarted, rbtype.EventCompensationSucceeded, rbtype.EventCompensationFailed:
			order = append(order, string(e.Type)+" "+e.StepKey)
		}
	}
	require.Equal(t, []string{
		"COMPENSATION_STARTED car", "COMPENSATION_SUCCEEDED car",
		"COMPENSATION_STARTED hotel", "COMPENSATION_FAILED hotel",
		"COMPENSATION_STARTED flight", "COMPENSATION_SUCCEEDED flight",
	}, order)
}

// A cancel at a gate undoes what the runbook did: the compensations of
// its completed steps run, newest first, and it finishes cancelled once
// they have; a cancel that says not to undoes nothing.
func TestCancelCompensates(t *testing.T) {
	for _, compensate := range []bool{true, false} {
		t.Run(fmt.Sprintf("compensate=%v", compensate), func(t *testing.T) {
			b := setup(t)
			b.run(t)
			id := b.submit(t, `(t.reserve :what "flight" :as @flight) (t.reserve :what "car" :after @flight :as @car)
				(t.approve :what "pay" :after @car :as @pay)`, nil)
			b.waitState(t, id, "awaiting_approval")
			require.NoError(t, b.engine.CancelWith(b.ctx, id, runtime.CancelOptions{By: "ops", Compensate: compensate}))
			v := b.waitFor(t, id, "cancelled and finished", func(v *apitype.RunbookView) bool {
				return v.Status == rbtype.RunbookCancelled && v.FinishedAt != nil
			})
			if !compensate {
				require.Empty(t, b.rec.undone)
				require.Nil(t, step(v, "car").Compensation)
				return
			}
			require.Equal(t, []string{"car", "flight"}, b.rec.undone, "undone in reverse order of completion")
			require.Equal(t, &apitype.Compensation{Status: "complete"}, step(v, "car").Compensation)
			require.Equal(t, &apitype.Compensation{Status: "complete"}, step(v, "flight").Compensation)
			require.Equal(t, rbtype.StepCancelled, step(v, "pay").Status)
		})
	}
}

func TestDryRun(t *testing.T) {
	b := setup(t)
	b.run(t)
	sub, err := b.engine.SubmitSource(b.ctx, "dry.rbk", []byte(`
(t.echo :v 1 :as @pure)
(t.count :x 1 :as @effect)
(t.wait :after @effect :as @w)
(t.approve :after @w :as @gated)`), runtime.Submission{Mode: rbtype.ModeDryRun})
	require.NoError(t, err)
	v := b.waitStatus(t, sub.ID, rbtype.RunbookComplete)
	require.Equal(t, rbtype.ModeDryRun, v.Mode)
	require.False(t, step(v, "pure").Simulated, "steps without side effects run")
	require.True(t, step(v, "effect").Simulated, "a handler without DryRun is recorded as simulated")
	require.True(t, step(v, "w").Simulated, "durable steps do not park")
	require.True(t, step(v, "gated").Simulated)
	require.Equal(t, 0, b.rec.callsOf(sub.ID, "effect"), "no side effect happened")
	require.NotContains(t, b.eventTypes(t, sub.ID), "STEP_PARKED w")
}

func TestExtendRunningRunbook(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.make-id :n 1 :as @first) (t.wait :after @first :as @w)`, nil)
	b.waitState(t, id, "parked")
	ext, err := b.engine.Extend(b.ctx, id, runtime.Extension{
		Filename: "more.rbk", Source: []byte(`(t.echo :id @first.id :who $who :as @second)`),
		Inputs: map[string]any{"who": "agent-7"}, Actor: "agent-7",
	})
	require.NoError(t, err)
	require.Equal(t, []string{"second"}, ext.Steps)
	require.Equal(t, 2, ext.Version)
	v := b.waitFor(t, id, "extended", func(v *apitype.RunbookView) bool {
		return len(v.Steps) == 3 && step(v, "second").Status == rbtype.StepComplete
	})
	var second map[string]any
	require.NoError(t, json.Unmarshal(v.Outcomes["second"], &second))
	var first map[string]any
	require.NoError(t, json.Unmarshal(v.Outcomes["first"], &first))
	require.Equal(t, first["id"], second["id"])
	require.Equal(t, "agent-7", second["who"])
	require.Equal(t, 2, v.Version)
	require.Contains(t, b.eventTypes(t, id), "RUNBOOK_EXTENDED")
	ms, err := b.store.Mutations(b.ctx, id)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, "agent-7", ms[0].Actor)

	// A binding that exists already is refused, with the compiler's
	// diagnostic; so is a runbook that has finished.
	_, err = b.engine.Extend(b.ctx, id, runtime.Extension{Filename: "dup.rbk", Source: []byte(`(t.echo :v 1 :as @first)`)})
	var ce *runtime.CompileError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "E031", string(ce.Diagnostics[0].Code))
	require.NoError(t, b.engine.Cancel(b.ctx, id, "x"))
	_, err = b.engine.Extend(b.ctx, id, runtime.Extension{Filename: "late.rbk", Source: []byte(`(t.echo :v 1)`)})
	require.ErrorIs(t, err, rbtype.ErrConflict)
}

func TestSubmitChecksInputsAndDedupes(t *testing.T) {
	b := setup(t)
	src := []byte(`(t.make-id :name $who :count $n)`)
	_, err := b.engine.SubmitSource(b.ctx, "x.rbk", src, runtime.Submission{Inputs: map[string]any{"who": 5, "extra": 1}})
	require.ErrorIs(t, err, rbtype.ErrInvalid)
	require.ErrorContains(t, err, "input $n is missing")
	require.ErrorContains(t, err, "input $extra is not used by the runbook")

	_, err = b.engine.SubmitSource(b.ctx, "x.rbk", []byte(`(t.nope)`), runtime.Submission{})
	var ce *runtime.CompileError
	require.ErrorAs(t, err, &ce)

	inputs := map[string]any{"who": "ada", "n": json.Number("2")}
	first, err := b.engine.SubmitSource(b.ctx, "x.rbk", src, runtime.Submission{Inputs: inputs, IdempotencyKey: "k-1"})
	require.NoError(t, err)
	require.True(t, first.Created)
	again, err := b.engine.SubmitSource(b.ctx, "x.rbk", src, runtime.Submission{Inputs: inputs, IdempotencyKey: "k-1"})
	require.NoError(t, err)
	require.False(t, again.Created)
	require.Equal(t, first.ID, again.ID)
	// The same key for another request is refused, not silently answered
	// with a runbook that is not what was asked for.
	_, err = b.engine.SubmitSource(b.ctx, "x.rbk", src, runtime.Submission{
		Inputs: map[string]any{"who": "bob", "n": json.Number("2")}, IdempotencyKey: "k-1"})
	require.ErrorIs(t, err, rbtype.ErrConflict)
	require.ErrorContains(t, err, `idempotency key "k-1" was used for another request`)

	// Without a key, the plan and inputs are the key.
	a, err := b.engine.SubmitSource(b.ctx, "x.rbk", src, runtime.Submission{Inputs: inputs})
	require.NoError(t, err)
	c, err := b.engine.SubmitSource(b.ctx, "y.rbk", append([]byte(";; renamed and commented\n"), src...), runtime.Submission{Inputs: inputs})
	require.NoError(t, err)
	require.Equal(t, a.ID, c.ID)
	require.False(t, c.Created)
}

// A submission without an Idempotency-Key is deduplicated by its plan,
// mode and inputs while its runbook has not failed; once it failed, the
// same plan and inputs run again as a new runbook, and repeats then meet
// that one (docs/design/semantics.md section 6). A submission with a key keeps
// returning the runbook it named, failed or not.
func TestRequestKeyDedupeEndsWhenTheRunbookFails(t *testing.T) {
	b := setup(t)
	b.run(t)
	// The runbook parks, so that "while it runs" is a state the test
	// holds, not a race with its failure; a failed notification ends it.
	source := []byte(`(t.wait :as @w)`)
	submit := func(key string) *apitype.Submitted {
		t.Helper()
		sub, err := b.engine.SubmitSource(b.ctx, "w.rbk", source, runtime.Submission{Actor: "test", IdempotencyKey: key})
		require.NoError(t, err)
		return sub
	}
	fail := func(id uuid.UUID) {
		t.Helper()
		key := step(b.waitState(t, id, "parked"), "w").CorrelationKey
		_, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeFailed,
			ErrorCode: rbtype.CodePolicyDenied, ErrorMessage: "refused"})
		require.NoError(t, err)
		b.waitStatus(t, id, rbtype.RunbookFailed)
	}
	first := submit("")
	require.True(t, first.Created)
	b.waitState(t, first.ID, "parked")
	again := submit("")
	require.False(t, again.Created, "while it runs, a repeat is the same runbook")
	require.Equal(t, first.ID, again.ID)
	fail(first.ID)

	second := submit("")
	require.True(t, second.Created, "after a failure the same plan and inputs run again")
	require.NotEqual(t, first.ID, second.ID)
	b.waitState(t, second.ID, "parked")
	repeat := submit("")
	require.False(t, repeat.Created)
	require.Equal(t, second.ID, repeat.ID, "repeats meet the new run, not the failed one")
	fail(second.ID)
	third := submit("")
	require.True(t, third.Created)
	require.NotContains(t, []uuid.UUID{first.ID, second.ID}, third.ID)

	keyed := submit("my-key")
	require.True(t, keyed.Created)
	fail(keyed.ID)
	again = submit("my-key")
	require.False(t, again.Created, "an Idempotency-Key names one runbook, whatever became of it")
	require.Equal(t, keyed.ID, again.ID)
}

// The failure modes on a diamond, against PostgreSQL: b fails for good
// while c is parked; d reads b's result, e only runs after b and c. The
// view lists the failure and, while c waits, the command that moves it.
func TestFailureModesOnADiamond(t *testing.T) {
	const diamond = `
(t.echo :v "x" :as @a)
(t.fail :after @a :on-failure "%s" :as @b)
(t.wait :after @a :as @c)
(t.echo :got @b.code :after @c :as @d)
(t.echo :v "e" :after [@b @c] :as @e)`
	statuses := func(v *apitype.RunbookView) map[string]rbtype.StepStatus {
		out := map[string]rbtype.StepStatus{}
		for _, s := range v.Steps {
			out[s.Key] = s.Status
		}
		return out
	}
	for _, tc := range []struct {
		mode    rbtype.OnFailure
		end     map[string]rbtype.StepStatus
		runbook rbtype.RunbookStatus
	}{
		{rbtype.OnFailureAbort, map[string]rbtype.StepStatus{"a": "complete", "b": "failed", "c": "cancelled", "d": "skipped", "e": "skipped"}, rbtype.RunbookFailed},
		{rbtype.OnFailureIsolate, map[string]rbtype.StepStatus{"a": "complete", "b": "failed", "c": "complete", "d": "skipped", "e": "skipped"}, rbtype.RunbookFailed},
		{rbtype.OnFailureContinue, map[string]rbtype.StepStatus{"a": "complete", "b": "failed", "c": "complete", "d": "skipped", "e": "complete"}, rbtype.RunbookPartial},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			b := setup(t)
			b.run(t)
			id := b.submit(t, fmt.Sprintf(diamond, tc.mode), nil)
			if tc.mode == rbtype.OnFailureAbort {
				v := b.waitFor(t, id, "failed", func(v *apitype.RunbookView) bool {
					return v.Status == rbtype.RunbookFailed && step(v, "c").Status == rbtype.StepCancelled
				})
				require.Equal(t, tc.end, statuses(v))
				require.Equal(t, []apitype.FailureView{{Step: "b", Code: rbtype.CodePolicyDenied, Message: "no"}}, v.Failures)
				require.Equal(t, []apitype.ActionView{{Kind: apitype.ActionRetry, Step: "b", Args: apitype.ActionArgs{RunbookID: id}, Command: "rbd retry " + id.String() + " --step b",
					Does: "run step b again (same idempotency key), with the steps its failure held back"}}, v.NextActions)
				return
			}
			v := b.waitState(t, id, "parked")
			require.Equal(t, rbtype.StepFailed, step(v, "b").Status)
			require.Equal(t, []apitype.FailureView{{Step: "b", Code: rbtype.CodePolicyDenied, Message: "no"}}, v.Failures)
			key := step(v, "c").CorrelationKey
			require.Equal(t, []apitype.ActionView{{Kind: apitype.ActionNotify, Step: "c",
				Args: apitype.ActionArgs{RunbookID: id, CorrelationKey: key}, Command: "rbd notify " + key + " --result '{...}'",
				Does: "deliver the result step c waits for (correlation key " + key + "): it completes with it"}}, v.NextActions)
			_, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted})
			require.NoError(t, err)
			v = b.waitStatus(t, id, tc.runbook)
			require.Equal(t, tc.end, statuses(v))
			require.NotNil(t, v.FinishedAt)
			require.Equal(t, []apitype.ActionView{{Kind: apitype.ActionRetry, Step: "b", Args: apitype.ActionArgs{RunbookID: id}, Command: "rbd retry " + id.String() + " --step b",
				Does: "run step b again (same idempotency key), with the steps its failure held back"}}, v.NextActions)
		})
	}
}
