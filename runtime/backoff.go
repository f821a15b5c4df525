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
// max_delay, plus up to a fifth of that as jitter drawn from seed, the
// attempt's seed (derived from the lineage root, the step key and the
// attempt: the same on every replay).
func RetryDelay(r verbs.Retry, seed uint64, attempt int) time.Duration {
	d := r.Delay(attempt)
	return d + time.Duration(maxJitter*jitterFraction(seed)*float64(d))
}
