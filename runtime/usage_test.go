package runtime

import (
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
)

// Usage is bounded wherever it comes in (issue 27): a notification's is
// refused over the bounds, an Rbd-Usage header's reports nothing, and a Go
// handler's is held to them.
func TestUsageIsBounded(t *testing.T) {
	require.NoError(t, machine.CheckUsage(driver.Usage{TokensIn: machine.MaxUsageTokens, CostUSD: machine.MaxUsageCost}))
	require.ErrorIs(t, machine.CheckUsage(driver.Usage{TokensOut: machine.MaxUsageTokens + 1}), machine.ErrInvalid)
	require.ErrorIs(t, machine.CheckUsage(driver.Usage{Credits: 1.7e308}), machine.ErrInvalid)
	require.ErrorIs(t, machine.CheckUsage(driver.Usage{CostUSD: math.NaN()}), machine.ErrInvalid)

	h := http.Header{}
	h.Set(UsageHeader, `{"tokens_in": 9223372036854775807}`)
	require.Equal(t, driver.Usage{}, usageOf(h))
	h.Set(UsageHeader, `{"tokens_in": 12, "cost_usd": 0.5}`)
	require.Equal(t, driver.Usage{TokensIn: 12, CostUSD: 0.5}, usageOf(h))

	require.Equal(t, driver.Usage{TokensIn: machine.MaxUsageTokens, TokensOut: 0, CostUSD: machine.MaxUsageCost, Credits: 0, Model: "m"},
		machine.BoundedUsage(driver.Usage{TokensIn: math.MaxInt64, TokensOut: -5, CostUSD: math.Inf(1), Credits: math.NaN(), Model: "m"}))
}
