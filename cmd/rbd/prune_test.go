package main

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
)

// TestPruneFinishedRunbooks: rbd prune --finished-before deletes the
// runbooks that finished before the cutoff, with their steps, events and
// notifications, and leaves the others.
func TestPruneFinishedRunbooks(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	d := e.start(t, "--verbs", verbs)
	cl := d.client("")
	ctx := context.Background()
	done, err := cl.Submit(ctx, apitype.SubmitRequest{Source: `(t.echo :v "x")`})
	require.NoError(t, err)
	parked, err := cl.Submit(ctx, apitype.SubmitRequest{Source: "(t.wait :as @w)"})
	require.NoError(t, err)
	waitUntil(t, "one to finish and one to park", func() (bool, error) {
		a, err := cl.Get(ctx, done.ID.String())
		if err != nil {
			return false, err
		}
		b, err := cl.Get(ctx, parked.ID.String())
		return a.Status == rbtype.RunbookComplete && len(b.BlockedOn) > 0, err
	})

	status, out := e.exitOf(t, nil, "prune", "--finished-before", "720h")
	require.Equal(t, 0, status, out)
	require.Contains(t, out, "pruned 0 runbooks")
	status, out = e.exitOf(t, nil, "prune", "--finished-before", "0s")
	require.Equal(t, 0, status, out)
	require.Contains(t, out, "pruned 1 runbook (1 step, 0 edges, ", "with what it owned, counted")

	_, err = cl.Get(ctx, done.ID.String())
	var apiErr *client.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	v, err := cl.Get(ctx, parked.ID.String())
	require.NoError(t, err, "a runbook still running is left alone")
	require.NotEmpty(t, v.BlockedOn)
	// The event ledger has no foreign key to cascade (migration 008): its
	// rows go with their runbook by hand.
	store := pgtest.Open(t, e.schema)
	events, err := store.Events(ctx, done.ID, 0, 0)
	require.NoError(t, err)
	require.Empty(t, events, "the pruned runbook's events went with it")
	events, err = store.Events(ctx, parked.ID, 0, 0)
	require.NoError(t, err)
	require.NotEmpty(t, events, "and the running one's stay")

	status, out = e.exitOf(t, nil, "prune")
	require.Equal(t, 2, status, "--finished-before is required: %s", out)
}
