package runtime

import (
	"time"

	"github.com/runbookdev/runbook/verbs"
)

// maxJitter is the largest share of a retry delay added as jitter, so that
// retries of many steps failing together spread out.
const maxJitter = 0.2

// RetryDelay is how long a step waits before attempt+1 after attempt
// failed: base * 2^(attempt-1) (or base, for fixed backoff) capped at
// max_delay, plus up to a fifth of that as jitter that depends only on the
// step and the attempt.
func RetryDelay(r verbs.Retry, stepID int64, attempt int) time.Duration {
	d := r.Delay(attempt)
	return d + time.Duration(maxJitter*jitterFraction(stepID, attempt)*float64(d))
}
