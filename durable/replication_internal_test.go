package durable

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
)

func TestSynchronousNeedsANamedStandbyAndAWaitingCommit(t *testing.T) {
	for _, c := range []struct {
		names, commit string
		want          bool
	}{
		{"ANY 1 (pgautofailover_standby_2)", "on", true},
		{"*", "remote_apply", true},
		{"*", "remote_write", false},
		{"*", "local", false},
		{"*", "off", false},
		{"", "on", false},
		{"  ", "remote_apply", false},
	} {
		r := Replication{Standbys: 1, SynchronousStandbyNames: c.names, SynchronousCommit: c.commit}
		require.Equal(t, c.want, r.Synchronous(), "%q, %s", c.names, c.commit)
	}
	msg := (&AsyncReplicationError{Replication{Standbys: 2, SynchronousCommit: "on"}}).Error()
	require.Contains(t, msg, "--allow-async-replication")
	require.Contains(t, msg, "synchronous_standby_names is empty")
}

// A failover's errors are transient: the advance retries them and the
// API answers 503.
func TestFailoverErrorsAreTransient(t *testing.T) {
	for _, code := range []string{"25006", "08006", "08003", "08000", "57P01", "57P03"} {
		err := translate(&pgconn.PgError{Code: code})
		require.True(t, errors.Is(err, driver.ErrTransient), code)
	}
	require.False(t, errors.Is(translate(&pgconn.PgError{Code: "23502"}), driver.ErrTransient), "not_null_violation")
}
