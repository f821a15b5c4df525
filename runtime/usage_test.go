package runtime

import (
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
)

// Usage is bounded wherever it comes in (issue 27): a notification's is
// refused over the bounds, an Rbd-Usage header's reports nothing, and a Go
// handler's is held to them.
func TestUsageIsBounded(t *testing.T) {
	require.NoError(t, checkUsage(driver.Usage{TokensIn: MaxUsageTokens, CostUSD: MaxUsageCost}))
	require.ErrorIs(t, checkUsage(driver.Usage{TokensOut: MaxUsageTokens + 1}), ErrInvalid)
	require.ErrorIs(t, checkUsage(driver.Usage{Credits: 1.7e308}), ErrInvalid)
	require.ErrorIs(t, checkUsage(driver.Usage{CostUSD: math.NaN()}), ErrInvalid)

	h := http.Header{}
	h.Set(UsageHeader, `{"tokens_in": 9223372036854775807}`)
	require.Equal(t, driver.Usage{}, usageOf(h))
	h.Set(UsageHeader, `{"tokens_in": 12, "cost_usd": 0.5}`)
	require.Equal(t, driver.Usage{TokensIn: 12, CostUSD: 0.5}, usageOf(h))

	require.Equal(t, driver.Usage{TokensIn: MaxUsageTokens, TokensOut: 0, CostUSD: MaxUsageCost, Credits: 0, Model: "m"},
		boundedUsage(driver.Usage{TokensIn: math.MaxInt64, TokensOut: -5, CostUSD: math.Inf(1), Credits: math.NaN(), Model: "m"}))
}
