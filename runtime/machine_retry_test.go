package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// Retries that match the error (docs/design/semantics.md section 12), decided by the
// state machine: a verb that declares no retry gets the table by code.

// failAfter is failWith with the provider's Retry-After.
func failAfter(c *machine.PendingCall, code rbtype.ErrorCode, after time.Duration, at time.Time) *machine.Outcome {
	o := failWith(c, code)
	o.Err.RetryAfter, o.Err.RetryAt = after, at
	return o
}

// runToFailure fails each attempt of step key with code until it fails for
// good, moving the clock to each retry, and returns the attempts made and
// the delays scheduled.
func runToFailure(t *testing.T, f *fixture, key string, code rbtype.ErrorCode) (attempts int, delays []time.Duration) {
	t.Helper()
	_, calls := f.advance()
	for {
		c := callFor(t, calls, key)
		attempts = c.Attempt
		w, _ := f.advance(failWith(c, code))
		if f.step(key).Status == rbtype.StepFailed {
			return attempts, delays
		}
		d := eventData[machine.RetryScheduledData](t, w.Events, "STEP_RETRY_SCHEDULED "+key)
		delays = append(delays, d.NextAttemptAt.Sub(f.now))
		f.now = d.NextAttemptAt
		_, calls = f.advance()
	}
}

func TestMachineDefaultRetryTableByCode(t *testing.T) {
	for _, tt := range []struct {
		code     rbtype.ErrorCode
		attempts int
		first    time.Duration // the first delay, before jitter
	}{
		{rbtype.CodeRateLimit, 5, 2 * time.Second},
		{rbtype.CodeNetworkTimeout, 3, time.Second},
		{rbtype.CodeTemporaryProviderError, 3, time.Second},
		{rbtype.CodeTempProvider, 3, time.Second}, // the seed's short name, sent by a service that uses it
		{rbtype.CodeTransientDBLock, 1, 0},        // retryable, but the table gives it one attempt
		{rbtype.CodeAuthForbidden, 1, 0},
		{rbtype.CodeInvalidInput, 1, 0},
		{rbtype.CodeVerifyFailed, 1, 0},
		{rbtype.CodeBudgetExceeded, 1, 0},
		{rbtype.CodePolicyDenied, 1, 0},
	} {
		t.Run(string(tt.code), func(t *testing.T) {
			f := newFixture(t, `(m.call :to "x" :as @c)`, nil)
			attempts, delays := runToFailure(t, f, "c", tt.code)
			require.Equal(t, tt.attempts, attempts)
			require.Len(t, delays, tt.attempts-1)
			for i, d := range delays {
				base := tt.first << i // exponential from the code's base
				require.GreaterOrEqual(t, d, base, "delay %d", i+1)
				require.LessOrEqual(t, d, base+base/5, "delay %d: jitter adds at most a fifth", i+1)
			}
			require.Equal(t, rbtype.RunbookFailed, f.rb.Status)
		})
	}
}

// The jitter is drawn from the lineage's seed: the same runbook computes
// the same delays again.
func TestMachineRetryJitterIsSeededFromTheLineage(t *testing.T) {
	_, first := runToFailure(t, newFixture(t, `(m.call :to "x" :as @c)`, nil), "c", rbtype.CodeRateLimit)
	_, again := runToFailure(t, newFixture(t, `(m.call :to "x" :as @c)`, nil), "c", rbtype.CodeRateLimit)
	require.Equal(t, first, again)
	exec := newFixture(t, `(m.call :to "x" :as @c)`, nil)
	e := exec.plan.Steps["c"].Execution
	require.Equal(t, machine.RetryDelayFor(e.Retry, rbtype.CodeRateLimit, machine.StepSeed(machine.OriginOf(exec.rb, &e), "c", 1), 1), first[0])
}

// A plan frozen before v3 has no by_code: its steps keep the attempts
// their verb had then (one, by default), whatever the code.
func TestMachinePlanFrozenBeforeV3KeepsItsAttempts(t *testing.T) {
	f := newFixture(t, `(m.call :to "x" :as @c)`, nil)
	f.plan.Steps["c"].Execution.Retry.ByCode = nil
	attempts, _ := runToFailure(t, f, "c", rbtype.CodeRateLimit)
	require.Equal(t, 1, attempts)

	f = newFixture(t, `(m.send :to "x" :as @s)`, nil) // max_attempts: 3, no by_code
	attempts, _ = runToFailure(t, f, "s", rbtype.CodeRateLimit)
	require.Equal(t, 3, attempts)
}

// A provider's Retry-After is honoured when it is longer than the backoff,
// and capped by the code's policy; a year, a negative wait or a date in the
// past never stalls the step.
func TestMachineRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name            string
		after           time.Duration
		at              func(now time.Time) time.Time
		atLeast, atMost time.Duration
		asked           time.Duration
	}{
		{name: "longer than the backoff", after: 30 * time.Second, atLeast: 30 * time.Second, atMost: 30 * time.Second, asked: 30 * time.Second},
		{name: "shorter than the backoff", after: time.Second, atLeast: 2 * time.Second, atMost: 2400 * time.Millisecond, asked: time.Second},
		{name: "a year", after: 365 * 24 * time.Hour, atLeast: 2 * time.Minute, atMost: 2 * time.Minute, asked: 2 * time.Minute},
		{name: "negative", after: -time.Hour, atLeast: 2 * time.Second, atMost: 2400 * time.Millisecond},
		{name: "a date in the past", at: func(now time.Time) time.Time { return now.Add(-time.Hour) }, atLeast: 2 * time.Second, atMost: 2400 * time.Millisecond},
		{name: "a date a minute ahead", at: func(now time.Time) time.Time { return now.Add(time.Minute) }, atLeast: time.Minute, atMost: time.Minute, asked: time.Minute},
		{name: "a date a year ahead", at: func(now time.Time) time.Time { return now.AddDate(1, 0, 0) }, atLeast: 2 * time.Minute, atMost: 2 * time.Minute, asked: 2 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, `(m.call :to "x" :as @c)`, nil)
			_, calls := f.advance()
			var at time.Time
			if tt.at != nil {
				at = tt.at(f.now)
			}
			w, _ := f.advance(failAfter(callFor(t, calls, "c"), rbtype.CodeRateLimit, tt.after, at))
			d := eventData[machine.RetryScheduledData](t, w.Events, "STEP_RETRY_SCHEDULED c")
			delay := d.NextAttemptAt.Sub(f.now)
			require.Equal(t, delay.Milliseconds(), d.DelayMS)
			require.GreaterOrEqual(t, delay, tt.atLeast)
			require.LessOrEqual(t, delay, tt.atMost)
			require.Equal(t, tt.asked.Milliseconds(), d.RetryAfterMS)
			require.True(t, f.step("c").NextAttemptAt.Equal(f.now.Add(delay)))
			require.True(t, f.rb.WakeAt.Equal(f.now.Add(delay)), "the runbook wakes for it")

			f.now = f.now.Add(delay)
			_, calls = f.advance()
			require.Equal(t, 2, callFor(t, calls, "c").Attempt, "retried at its time")
		})
	}
}

// An external call whose outside system ignores idempotency keys is never
// retried: its failure may have acted, and a repeat could act twice.
func TestMachineKeylessExternalCallIsNeverRetried(t *testing.T) {
	f := newFixture(t, `(m.keyless :to "x" :as @k)`, nil)
	_, calls := f.advance()
	w, _ := f.advance(failWith(callFor(t, calls, "k"), rbtype.CodeNetworkTimeout))
	require.Equal(t, rbtype.StepFailed, f.step("k").Status)
	require.Equal(t, machine.StepFailedData{Code: rbtype.CodeNetworkTimeout, Message: "failed with NETWORK_TIMEOUT", NotRetried: machine.FinalNoKey},
		eventData[machine.StepFailedData](t, w.Events, "STEP_FAILED k"))

	// A step with no key at all, however it came to have none, likewise.
	f = newFixture(t, `(m.call :to "x" :as @c)`, nil)
	_, calls = f.advance()
	f.step("c").IdempotencyKey = ""
	f.advance(failWith(callFor(t, calls, "c"), rbtype.CodeRateLimit))
	require.Equal(t, rbtype.StepFailed, f.step("c").Status)
}

// Every attempt keeps its own arguments (docs/design/semantics.md section 13): each
// ledger row has the hash of its attempt's arguments, and a step that
// starts again with arguments other than those it held keeps the old ones
// by their hash before the new replace them on its row.
func TestMachineEveryAttemptKeepsItsArguments(t *testing.T) {
	f := newFixture(t, `(m.call :to "x" :as @c)`, nil)
	_, calls := f.advance()
	first := callFor(t, calls, "c")
	w, _ := f.advance(failWith(first, rbtype.CodeRateLimit))
	require.Len(t, w.Attempts, 1)
	newHash := machine.HashJSON(f.step("c").ResolvedArgs)
	require.Equal(t, newHash, w.Attempts[0].ArgsHash)

	// As if the step had held other arguments when it failed.
	f.step("c").ResolvedArgs = []byte(`{"to": "y",  "n": 1}`)
	f.now = f.now.Add(time.Hour)
	w, calls = f.advance()
	require.Equal(t, 2, callFor(t, calls, "c").Attempt)
	old := `{"n":1,"to":"y"}`
	require.Len(t, w.Arguments, 1)
	require.Equal(t, machine.HashJSON([]byte(old)), w.Arguments[0].Hash)
	require.JSONEq(t, old, string(w.Arguments[0].Args))
	w, _ = f.advance(succeed(callFor(t, calls, "c"), map[string]any{"ok": true}))
	// A plain success: its ledger row is kept in its step's row.
	require.Empty(t, w.Attempts)
	require.Equal(t, newHash, f.implicitLedger(w, "c").ArgsHash, "the second attempt's own")
	require.Equal(t, machine.HashJSON([]byte(`{"ok":true}`)), f.implicitLedger(w, "c").ResultHash)

	// The same arguments again keep nothing more.
	f = newFixture(t, `(m.call :to "x" :as @c)`, nil)
	_, calls = f.advance()
	f.advance(failWith(callFor(t, calls, "c"), rbtype.CodeRateLimit))
	f.now = f.now.Add(time.Hour)
	w, _ = f.advance()
	require.Empty(t, w.Arguments)
}
