package machine

import (
	"time"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// maxJitter is the largest share of a retry delay added as jitter, so that
// retries of many steps failing together spread out.
const maxJitter = 0.2

// RetryDelay is how long a step waits before attempt+1 after attempt
// failed, for a block without a policy of its own for the code:
// base * 2^(attempt-1) (or base, for fixed backoff) capped at max_delay,
// plus up to a fifth of that as jitter drawn from seed, the attempt's seed
// (derived from the lineage root, the step key and the attempt: the same on
// every replay).
func RetryDelay(r verbs.Retry, seed uint64, attempt int) time.Duration {
	return withJitter(r.Delay(attempt), seed)
}

// RetryDelayFor is RetryDelay for a failure with code: the code's own
// backoff when the block has one (docs/design/semantics.md section 12).
func RetryDelayFor(r verbs.Retry, code rbtype.ErrorCode, seed uint64, attempt int) time.Duration {
	return withJitter(r.DelayFor(code, attempt), seed)
}

func withJitter(d time.Duration, seed uint64) time.Duration {
	return d + time.Duration(maxJitter*jitterFraction(seed)*float64(d))
}

// retryDecision is whether a failed attempt is tried again, and when.
type retryDecision struct {
	retry bool
	delay time.Duration
	// retryAfter is what the provider asked for, after the cap; zero
	// when it asked for nothing (or for a time already past).
	retryAfter time.Duration
	// why says why a retryable code is not retried, for the event.
	why string
}

// Why a retryable failure is final.
const (
	finalAttemptsUsed = "attempts_used"
	finalAborted      = "aborted"
	FinalNoKey        = "no_idempotency_key"
)

// decideRetry is the retry decision of docs/design/semantics.md section 12 for a step
// whose attempt failed with e: a retryable code with attempts left under
// its policy waits for its backoff (the code's own, seeded jitter added),
// or for as long as the provider's Retry-After asked when that is longer,
// never longer than the policy's cap. A call to the outside world with no
// idempotency key is never repeated: a repeat could not be told from a
// second effect. Nothing is retried once the runbook aborted.
func (t *transition) decideRetry(s *rbtype.Step, e *handler.Error, exec *verbs.Execution) retryDecision {
	if !e.Retryable() {
		return retryDecision{}
	}
	policy := exec.Retry.For(e.Code)
	switch {
	case s.Attempt >= policy.MaxAttempts:
		return retryDecision{why: finalAttemptsUsed}
	case t.aborted():
		return retryDecision{why: finalAborted}
	case exec.SideEffects == rbtype.SideEffectsExternalCall && !t.carriesKey(s, exec):
		return retryDecision{why: FinalNoKey}
	}
	d := retryDecision{retry: true,
		delay: RetryDelayFor(exec.Retry, e.Code, StepSeed(OriginOf(t.Rb, exec), s.Key, s.Attempt), s.Attempt)}
	if asked := e.RetryAfterFrom(t.Now); asked > 0 {
		d.retryAfter = min(asked, policy.Cap.D)
		d.delay = max(d.delay, d.retryAfter)
	}
	return d
}

// carriesKey reports whether a step's calls carry an idempotency key the
// system it calls honours: the step has one, its verb does not say that
// the provider ignores it (provider_dedupes: false), and neither does its
// handler (KeyIgnorer).
func (t *transition) carriesKey(s *rbtype.Step, exec *verbs.Execution) bool {
	if s.IdempotencyKey == "" || !exec.Idempotency.Dedupes() {
		return false
	}
	if h, ok := t.m.Handler(exec.Handler); ok {
		if k, ok := h.(KeyIgnorer); ok && k.IgnoresIdempotencyKey() {
			return false
		}
	}
	return true
}

// KeyIgnorer is implemented by a handler whose outside system takes no
// idempotency key (an SMTP relay, say): a failed call of an external_call
// step of it may have taken effect, and a retry could repeat it, so such a
// step is never retried (docs/design/semantics.md section 12). The built-in handlers
// all pass the key on.
type KeyIgnorer interface {
	IgnoresIdempotencyKey() bool
}
