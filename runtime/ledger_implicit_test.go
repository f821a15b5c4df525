package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// docs/design/runtime.md, "The job ledger and the edges": a plain attempt (it
// succeeded, used nothing, touched no cache) is kept in the row of the
// step it completed, and step_attempts shows it as the row the machine
// would have stored: the attempt's UUIDv5 id, its span id, the runbook's
// tenant, actor, correlation and trace ids, the worker, the arguments'
// and result's hashes. When the step moves on, or rbd prune deletes it,
// the row is written out as it stood: the ledger loses nothing and reads
// the same before and after.
func TestPlainAttemptsAreKeptInTheirStepsRows(t *testing.T) {
	b := setup(t)
	b.run(t)
	conn := pgtest.Conn(t, b.store)
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	var ids []uuid.UUID
	for i, sub := range []runtime.Submission{
		{Actor: "ana", Parent: parent, CorrelationID: "order-42"},
		{Actor: "bo"}, // a trace and a correlation id of its own
	} {
		sub.IdempotencyKey = fmt.Sprint("plain-", i)
		s, err := b.engine.SubmitSource(b.ctx, "plain.rbk", []byte(`(t.echo :v "x" :as @a) (t.echo :v @a.v :as @b)`), sub)
		require.NoError(t, err)
		b.waitStatus(t, s.ID, rbtype.RunbookComplete)
		ids = append(ids, s.ID)
	}

	for _, id := range ids {
		var stored int
		require.NoError(t, conn.QueryRow(b.ctx, `SELECT count(*) FROM step_attempt_rows WHERE runbook_id = $1`, id).Scan(&stored))
		require.Zero(t, stored, "plain attempts are no rows of their own")

		var tenant, actor string
		var correlation, traceID *string
		require.NoError(t, conn.QueryRow(b.ctx, `SELECT tenant, actor, correlation_id, trace_id FROM runbooks WHERE id = $1`, id).
			Scan(&tenant, &actor, &correlation, &traceID))
		rows := ledgerOf(t, conn, id)
		require.Len(t, rows, 2, "one ledger row per attempt")
		for _, key := range []string{"a", "b"} {
			r, ok := rows[key]
			require.True(t, ok, "step %s's attempt is in the ledger", key)
			attemptID := machine.AttemptID(id, key, 1)
			require.Equal(t, attemptID, r.AttemptID)
			require.Equal(t, machine.AttemptSpanID(attemptID).String(), r.SpanID)
			require.Equal(t, machine.CorrelationIDOf(id, deref(correlation)), r.CorrelationID)
			require.Equal(t, machine.TraceIDOf(id, deref(traceID)).String(), r.TraceID)
			require.Equal(t, tenant, r.Tenant)
			require.Equal(t, actor, r.Actor)
			require.Equal(t, "t.echo", r.Verb)
			require.Equal(t, 1, r.Attempt)
			require.Equal(t, "succeeded", r.Outcome)
			require.Equal(t, "off", r.Cache)
			require.NotEmpty(t, r.WorkerID)
			require.Len(t, r.ArgsHash, 64)
			require.Len(t, r.ResultHash, 64)
			require.NotNil(t, r.StartedAt)
			require.False(t, r.FinishedAt.Before(*r.StartedAt))
			require.Nil(t, r.TokensIn)
		}
	}
	require.Equal(t, parent.TraceID().String(), ledgerOf(t, conn, ids[0])["a"].TraceID)
	require.Equal(t, "order-42", ledgerOf(t, conn, ids[0])["a"].CorrelationID)

	// A step that moves on: its row is written out first, as it stood.
	before := ledgerOf(t, conn, ids[1])
	_, err := conn.Exec(b.ctx, `UPDATE runbook_steps SET status = 'pending', attempt = attempt + 1 WHERE runbook_id = $1 AND key = 'a'`, ids[1])
	require.NoError(t, err)
	var stored int
	require.NoError(t, conn.QueryRow(b.ctx, `SELECT count(*) FROM step_attempt_rows WHERE runbook_id = $1 AND step_key = 'a'`, ids[1]).Scan(&stored))
	require.Equal(t, 1, stored)
	require.Equal(t, before, ledgerOf(t, conn, ids[1]), "the ledger reads the same")

	// rbd prune writes every implicit row out before the steps go.
	before = ledgerOf(t, conn, ids[0])
	p, err := b.store.Prune(b.ctx, driver.PruneOptions{FinishedBefore: time.Now().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Equal(t, int64(2), p.Runbooks)
	require.NoError(t, conn.QueryRow(b.ctx, `SELECT count(*) FROM step_attempt_rows WHERE runbook_id = $1`, ids[0]).Scan(&stored))
	require.Equal(t, 2, stored)
	require.Equal(t, before, ledgerOf(t, conn, ids[0]), "the ledger outlives prune, unchanged")
	require.Len(t, ledgerOf(t, conn, ids[1]), 2)
}

// ledgerEntry is a row of step_attempts.
type ledgerEntry struct {
	AttemptID                                            uuid.UUID
	Tenant, Actor, Verb, WorkerID, Outcome, Cache        string
	CorrelationID, TraceID, SpanID, ArgsHash, ResultHash string
	Attempt                                              int
	StartedAt                                            *time.Time
	FinishedAt                                           time.Time
	TokensIn                                             *int64
}

// ledgerOf reads a runbook's ledger rows from step_attempts, by step.
func ledgerOf(t *testing.T, conn *pgx.Conn, id uuid.UUID) map[string]ledgerEntry {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
		SELECT step_key, attempt_id, tenant, actor, verb, coalesce(worker_id, ''), outcome, cache,
		       coalesce(correlation_id, ''), coalesce(trace_id, ''), coalesce(span_id, ''),
		       coalesce(args_hash, ''), coalesce(result_hash, ''), attempt, started_at, finished_at, tokens_in
		FROM step_attempts WHERE runbook_id = $1`, id)
	require.NoError(t, err)
	out := map[string]ledgerEntry{}
	for rows.Next() {
		var key string
		var e ledgerEntry
		require.NoError(t, rows.Scan(&key, &e.AttemptID, &e.Tenant, &e.Actor, &e.Verb, &e.WorkerID, &e.Outcome, &e.Cache,
			&e.CorrelationID, &e.TraceID, &e.SpanID, &e.ArgsHash, &e.ResultHash, &e.Attempt, &e.StartedAt, &e.FinishedAt, &e.TokensIn))
		_, dup := out[key]
		require.False(t, dup, "step %s has one ledger row", key)
		out[key] = e
	}
	require.NoError(t, rows.Err())
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
