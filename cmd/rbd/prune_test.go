package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
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

// TestPruneBesideEmbeddedDaemon: rbd prune runs beside a running rbd serve
// on the embedded PostgreSQL, connecting to the server that daemon
// started on --data-dir, which stays up; it refuses a --data-dir that
// holds no database (making none) and a schema without rbd's tables.
func TestPruneBesideEmbeddedDaemon(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "DATABASE_URL=", "RBD_SCHEMA=") // the defaults: the embedded server, schema rbd
	// The server may run as the postgres user, who must reach the data.
	root, err := os.MkdirTemp("", "rbd-prune-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	require.NoError(t, os.Chmod(root, 0o755))
	dataDir := filepath.Join(root, ".rbd")
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)

	d := e.start(t, "--data-dir", dataDir, "--verbs", verbs)
	cl := d.client("")
	ctx := context.Background()
	done, err := cl.Submit(ctx, apitype.SubmitRequest{Source: `(t.echo :v "x")`})
	require.NoError(t, err)
	waitUntil(t, "the runbook to complete", func() (bool, error) {
		v, err := cl.Get(ctx, done.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})

	status, out := e.exitOf(t, nil, "prune", "--data-dir", dataDir, "--finished-before", "0s")
	require.Equal(t, 0, status, out)
	require.Contains(t, out, "connected to the embedded PostgreSQL a running rbd serve started")
	require.Contains(t, out, "pruned 1 runbook (1 step, ")
	_, err = cl.Get(ctx, done.ID.String())
	var apiErr *client.Error
	require.True(t, errors.As(err, &apiErr), "the pruned runbook is gone: %v", err)
	require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	// The daemon's server is still its own, and up.
	again, err := cl.Submit(ctx, apitype.SubmitRequest{Source: `(t.echo :v "y")`})
	require.NoError(t, err, "the daemon still works after the prune")
	waitUntil(t, "a runbook submitted after the prune to complete", func() (bool, error) {
		v, err := cl.Get(ctx, again.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})

	// Another schema of the same database has no rbd tables: refused.
	status, out = e.exitOf(t, []string{"RBD_SCHEMA=elsewhere"}, "prune", "--data-dir", dataDir, "--finished-before", "0s")
	require.Equal(t, exitCantRun, status, out)
	require.Contains(t, out, `schema "elsewhere" of this database holds no rbd tables: it is empty, so there is nothing to prune`)
	require.Equal(t, 0, d.stop(syscall.SIGTERM))

	// With the daemon stopped, prune starts the server itself.
	status, out = e.exitOf(t, nil, "prune", "--data-dir", dataDir, "--finished-before", "0s")
	require.Equal(t, 0, status, out)
	require.Contains(t, out, "started the embedded PostgreSQL")
	require.Contains(t, out, "pruned 1 runbook")

	// A --data-dir with no database: refused, and none is made there.
	empty := filepath.Join(root, "other")
	status, out = e.exitOf(t, nil, "prune", "--data-dir", empty, "--finished-before", "0s")
	require.Equal(t, exitCantRun, status, out)
	require.Contains(t, out, "no database under --data-dir "+empty)
	require.NoDirExists(t, filepath.Join(empty, "pg"))
}
