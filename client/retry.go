package client

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// RetryPolicy says how a Client retries the answers that mean "nothing
// was done; try again": 503 (UNAVAILABLE), which the daemon sends with
// Retry-After. Nothing else is retried.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts of one call, the first included; 1
	// or less means never retry.
	MaxAttempts int
	// BaseDelay is the first wait when the answer has no Retry-After; each
	// later one doubles, with jitter (a random part of the wait), so that
	// clients turned away together do not come back together.
	BaseDelay time.Duration
	// MaxDelay caps one wait. A Retry-After longer than it is not waited
	// for: the call returns the 503 at once, its Error.RetryAfter saying
	// how long the daemon asked for, and the caller decides.
	MaxDelay time.Duration
}

// DefaultRetryPolicy is used when Client.RetryPolicy is nil: four attempts,
// waiting what Retry-After says (rbd says 1s) up to 10s.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, BaseDelay: 250 * time.Millisecond, MaxDelay: 10 * time.Second}

// NoRetry is a policy that sends each request once.
var NoRetry = RetryPolicy{MaxAttempts: 1}

// next says whether the answer to attempt (from 1) is retried, and after
// how long.
func (p *RetryPolicy) next(attempt int, resp *Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusServiceUnavailable || attempt >= p.MaxAttempts {
		return 0, false
	}
	if wait, ok := retryAfter(resp.Header, time.Now()); ok {
		return wait, wait <= p.MaxDelay
	}
	backoff := p.BaseDelay << (attempt - 1)
	if backoff <= 0 || backoff > p.MaxDelay {
		backoff = p.MaxDelay
	}
	// Half the wait fixed, half random.
	return backoff/2 + rand.N(backoff/2+1), true
}

// retryAfter reads a Retry-After header: a number of seconds, or an HTTP
// date (RFC 9110, section 10.2.3).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
