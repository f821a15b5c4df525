package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// docs/design/runtime.md, "Tables": runbook_edges is the canonical
// dependency graph, read from each runbook's stored plan (migration 027):
// the submission's edges, and those a for-each's expansion adds, which
// the grown plan holds. No edge is a row of its own, and rbd prune still
// counts a runbook's edges as it deletes it.
func TestTheEdgesAreThePlansEdges(t *testing.T) {
	b := setup(t)
	b.run(t)
	conn := pgtest.Conn(t, b.store)
	id := b.submit(t, `(t.echo :items ["a" "b" "c"] :as @list)
		(for-each @list.items :as @item (t.echo :v @item :as @each))
		(t.echo :after @each :as @join)`, nil)
	b.waitStatus(t, id, rbtype.RunbookComplete)

	var raw []byte
	require.NoError(t, conn.QueryRow(b.ctx, `SELECT plan FROM runbooks WHERE id = $1`, id).Scan(&raw))
	var plan compiler.Plan
	require.NoError(t, json.Unmarshal(raw, &plan))
	want := map[compiler.Edge]bool{}
	instances := 0
	for _, e := range plan.Edges {
		want[e] = true
		if strings.Contains(e.To, "[") {
			instances++
		}
	}
	require.GreaterOrEqual(t, instances, 3, "the grown plan holds the instances' edges: %v", plan.Edges)

	rows, err := conn.Query(b.ctx, `SELECT from_key, to_key, kind FROM runbook_edges WHERE runbook_id = $1`, id)
	require.NoError(t, err)
	got := map[compiler.Edge]bool{}
	for rows.Next() {
		var e compiler.Edge
		require.NoError(t, rows.Scan(&e.From, &e.To, &e.Kind))
		require.False(t, got[e], "edge %v shown once", e)
		got[e] = true
	}
	require.NoError(t, rows.Err())
	require.Equal(t, want, got)

	var stored int
	require.NoError(t, conn.QueryRow(b.ctx, `SELECT count(*) FROM runbook_edge_rows`).Scan(&stored))
	require.Zero(t, stored, "no edge is a row of its own")

	p, err := b.store.Prune(b.ctx, driver.PruneOptions{FinishedBefore: time.Now().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, int64(1), p.Runbooks)
	require.Equal(t, int64(len(plan.Edges)), p.Edges)
}
