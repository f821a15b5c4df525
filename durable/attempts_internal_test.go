package durable

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
)

// TestCostGroupsAllKnown holds the store's grouping expressions to the
// groups the engine accepts: one each, none more.
func TestCostGroupsAllKnown(t *testing.T) {
	require.Len(t, costGroups, len(driver.CostGroups))
	for _, g := range driver.CostGroups {
		require.Contains(t, costGroups, g)
	}
}
