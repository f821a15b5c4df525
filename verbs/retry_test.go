package verbs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// The retry policy a verb file gets (docs/design/semantics.md section 12): the default
// table unless it sets max_attempts, its by_code entries laid over it, and
// V023 for attempts a code will never be given.
func TestRetryByCode(t *testing.T) {
	load := func(t *testing.T, retry string) (Retry, []string) {
		t.Helper()
		defs, diags := Parse("v.yaml", []byte(minimal+retry))
		if len(defs) == 0 {
			return Retry{}, diagLines(diags)
		}
		return defs[0].Execution.Retry, diagLines(diags)
	}
	d := func(s string) Duration { return MustDuration(s) }

	t.Run("no retry block: the default table", func(t *testing.T) {
		r, diags := load(t, "")
		require.Empty(t, diags)
		require.Equal(t, 1, r.MaxAttempts)
		require.Equal(t, CodeRetry{MaxAttempts: 5, Base: d("PT2S"), Cap: d("PT2M")}, r.For(rbtype.CodeRateLimit))
		require.Equal(t, CodeRetry{MaxAttempts: 3, Base: d("PT1S"), Cap: d("PT1M")}, r.For(rbtype.CodeNetworkTimeout))
		require.Equal(t, 3, r.For(rbtype.CodeTemporaryProviderError).MaxAttempts)
		require.Equal(t, 3, r.For(rbtype.CodeTempProvider).MaxAttempts, "the seed's short name reads as TEMPORARY_PROVIDER_ERROR")
		require.Equal(t, 1, r.For(rbtype.CodeAuthForbidden).MaxAttempts)
		require.Equal(t, 1, r.For(rbtype.CodeTransientDBLock).MaxAttempts, "a code the table does not list is tried once")
		// 2^n seconds, capped at two minutes.
		var delays []time.Duration
		for n := 1; n <= 7; n++ {
			delays = append(delays, r.DelayFor(rbtype.CodeRateLimit, n))
		}
		require.Equal(t, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
			32 * time.Second, 64 * time.Second, 2 * time.Minute}, delays)
	})

	t.Run("max_attempts replaces the table", func(t *testing.T) {
		r, diags := load(t, "    retry: {max_attempts: 4, base_delay: PT3S}\n")
		require.Empty(t, diags)
		require.Nil(t, r.ByCode)
		require.Equal(t, CodeRetry{MaxAttempts: 4, Base: d("PT3S"), Cap: DefaultMaxDelay}, r.For(rbtype.CodeRateLimit))
	})

	t.Run("the contract's override", func(t *testing.T) {
		r, diags := load(t, "    retry: {max_attempts: 4, by_code: {RATE_LIMIT: {max_attempts: 8, base: PT5S, cap: PT2M}}}\n")
		require.Empty(t, diags)
		require.Equal(t, CodeRetry{MaxAttempts: 8, Base: d("PT5S"), Cap: d("PT2M")}, r.For(rbtype.CodeRateLimit))
		require.Equal(t, 4, r.For(rbtype.CodeTemporaryProviderError).MaxAttempts)
		require.Equal(t, 40*time.Second, r.DelayFor(rbtype.CodeRateLimit, 4))
	})

	t.Run("an override of the table keeps what it leaves out", func(t *testing.T) {
		r, diags := load(t, "    retry:\n      by_code:\n        TEMP_PROVIDER: {max_attempts: 6}\n")
		require.Empty(t, diags)
		require.Equal(t, CodeRetry{MaxAttempts: 6, Base: d("PT1S"), Cap: d("PT1M")}, r.ByCode[rbtype.CodeTemporaryProviderError],
			"the short name is frozen as TEMPORARY_PROVIDER_ERROR, the table's base and cap kept")
		require.Equal(t, 5, r.For(rbtype.CodeRateLimit).MaxAttempts, "the rest of the table stays")
	})

	t.Run("mistakes", func(t *testing.T) {
		_, diags := load(t, "    retry: {by_code: {AUTH_FORBIDDEN: {max_attempts: 3}}}\n")
		require.Equal(t, []string{`7:54-7:55 V023 AUTH_FORBIDDEN is never retried, so 3 attempts would never be made; a failure with it is final (retryable: NETWORK_TIMEOUT, RATE_LIMIT, TEMPORARY_PROVIDER_ERROR, TRANSIENT_DB_LOCK, DEPENDENCY_UNAVAILABLE)`}, diags)
		_, diags = load(t, "    retry: {by_code: {VERIFY_FAILED: {max_attempts: 1}}}\n")
		require.Empty(t, diags, "one attempt of a final code says what is true anyway")
		_, diags = load(t, "    retry: {by_code: {RATE_LIMT: {max_attempts: 3}}}\n")
		require.Len(t, diags, 1)
		require.Contains(t, diags[0], `V004 unknown error code "RATE_LIMT" in execution.retry.by_code`)
		require.Contains(t, diags[0], `(did you mean "RATE_LIMIT"?)`)
		_, diags = load(t, "    retry: {by_code: {RATE_LIMIT: {max_attempts: 3, base: PT1M, cap: PT1S}}}\n")
		require.Equal(t, []string{`7:70-7:74 V004 execution.retry.by_code.RATE_LIMIT.cap PT1S is shorter than its base PT1M`}, diags)
		_, diags = load(t, "    retry: {by_code: {RATE_LIMIT: {base: PT1S}}}\n")
		require.Len(t, diags, 1)
		require.Contains(t, diags[0], `V003 missing required field "max_attempts" in execution.retry.by_code.RATE_LIMIT`)
		_, diags = load(t, "    retry: {by_code: [RATE_LIMIT]}\n")
		require.Len(t, diags, 1)
		require.Contains(t, diags[0], "V004 execution.retry.by_code must be a mapping")
	})
}
