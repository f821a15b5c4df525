package builtin

import (
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// Usage is bounded wherever it comes in: a notification's is
// refused over the bounds, an Rbd-Usage header's reports nothing, and a Go
// handler's is held to them.
func TestUsageIsBounded(t *testing.T) {
	require.NoError(t, handler.CheckUsage(rbtype.Usage{TokensIn: handler.MaxUsageTokens, CostUSD: handler.MaxUsageCost}))
	require.ErrorIs(t, handler.CheckUsage(rbtype.Usage{TokensOut: handler.MaxUsageTokens + 1}), rbtype.ErrInvalid)
	require.ErrorIs(t, handler.CheckUsage(rbtype.Usage{Credits: 1.7e308}), rbtype.ErrInvalid)
	require.ErrorIs(t, handler.CheckUsage(rbtype.Usage{CostUSD: math.NaN()}), rbtype.ErrInvalid)

	h := http.Header{}
	h.Set(UsageHeader, `{"tokens_in": 9223372036854775807}`)
	require.Equal(t, rbtype.Usage{}, usageOf(h))
	h.Set(UsageHeader, `{"tokens_in": 12, "cost_usd": 0.5}`)
	require.Equal(t, rbtype.Usage{TokensIn: 12, CostUSD: 0.5}, usageOf(h))

	require.Equal(t, rbtype.Usage{TokensIn: handler.MaxUsageTokens, TokensOut: 0, CostUSD: handler.MaxUsageCost, Credits: 0, Model: "m"},
		handler.BoundedUsage(rbtype.Usage{TokensIn: math.MaxInt64, TokensOut: -5, CostUSD: math.Inf(1), Credits: math.NaN(), Model: "m"}))
}
