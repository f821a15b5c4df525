package durable

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/runbookdev/runbook/driver"
)

// Orphan notifications are those received for a correlation key that no
// invocation of their tenant has (any invocation, for a notification of no
// tenant): kept, because a step may yet park with the key (a sender can be
// first), but not forever, or anyone who can sign a webhook could fill the
// inbox with keys that belong to nothing. One signed by another tenant's
// secret for a key that a step waits on is an orphan too: that step will
// never consume it.
const (
	// pruneOrphansQuery deletes, oldest first, orphans received before
	// the cutoff. The partial index of unprocessed notifications finds
	// them by age; the unique index of invocation keys rules out owners.
	pruneOrphansQuery = `
		DELETE FROM completion_notifications
		WHERE id IN (
			SELECT n.id FROM completion_notifications n
			WHERE n.status = 'received' AND n.received_at < $1
			  AND NOT EXISTS (` + ownerOfNotification + `)
			ORDER BY n.received_at
			LIMIT $2)`

	// countOrphansQuery counts the orphans waiting, for the metric.
	countOrphansQuery = `
		SELECT count(*) FROM completion_notifications n
		WHERE n.status = 'received'
		  AND NOT EXISTS (` + ownerOfNotification + `)`

	// ownerOfNotification finds the invocation that notification n may
	// end, in its tenant's namespace.
	ownerOfNotification = `
		SELECT 1 FROM invocation_records i JOIN runbooks r ON r.id = i.runbook_id
		WHERE i.correlation_key = n.correlation_key AND (n.tenant IS NULL OR r.tenant = n.tenant)`
)

// PruneOrphanNotifications deletes up to limit notifications received
// before receivedBefore for keys no invocation has, and counts the orphans
// left.
func (s *Store) PruneOrphanNotifications(ctx context.Context, receivedBefore time.Time, limit int) (pruned, left int64, err error) {
	tag, err := s.pool.Exec(ctx, pruneOrphansQuery, receivedBefore, limit)
	if err != nil {
		return 0, 0, translate(err)
	}
	if err := s.pool.QueryRow(ctx, countOrphansQuery).Scan(&left); err != nil {
		return tag.RowsAffected(), 0, translate(err)
	}
	return tag.RowsAffected(), left, nil
}

// pruneRunbooksSQL picks a batch of finished runbooks, oldest first,
// through the index on finished_at. A runbook is finished once its
// finished_at is set (a failed runbook's compensations, and an escalated
// one's escalations, done); a retry clears it again.
const pruneRunbooksSQL = `
	SELECT id FROM runbooks
	WHERE finished_at < $1
	ORDER BY finished_at
	LIMIT $2`

// pruneStillFinishedSQL keeps, of a batch picked, the runbooks still
// finished before the cutoff once their locks are held.
const pruneStillFinishedSQL = `SELECT id FROM runbooks WHERE id = ANY($1) AND finished_at < $2`

// pruneRowsSQL are the deletes of a batch's runbooks' rows, in an order
// that leaves nothing pointing at what is gone: each through an index on
// the runbook id, each under the runbooks' locks.
var pruneRowsSQL = []struct {
	count func(*driver.Pruned) *int64
	sql   string
	// selects says the statement returns its count as its one row (the
	// events, many to a row), rather than the rows it deleted.
	selects bool
}{
	{func(p *driver.Pruned) *int64 { return &p.Notifications }, `DELETE FROM completion_notifications n USING invocation_records i
		WHERE i.correlation_key = n.correlation_key AND i.runbook_id = ANY($1)`, false},
	{func(p *driver.Pruned) *int64 { return &p.Invocations }, `DELETE FROM invocation_records WHERE runbook_id = ANY($1)`, false},
	{func(p *driver.Pruned) *int64 { return &p.Events }, `WITH gone AS (DELETE FROM runbook_event_rows WHERE runbook_id = ANY($1) RETURNING n)
		SELECT coalesce(sum(n), 0) FROM gone`, true},
	{func(p *driver.Pruned) *int64 { return &p.Mutations }, `DELETE FROM runbook_mutations WHERE runbook_id = ANY($1)`, false},
	// The edges a runbook's plan holds go with the runbook's row; those
	// stored as rows of their own (migration 027) are deleted here. Both
	// are counted.
	{func(p *driver.Pruned) *int64 { return &p.Edges }, `WITH gone AS (DELETE FROM runbook_edge_rows WHERE runbook_id = ANY($1) RETURNING 1)
		SELECT (SELECT count(*) FROM gone) + (SELECT coalesce(sum(jsonb_array_length(plan -> 'edges')), 0)
			FROM runbooks WHERE id = ANY($1) AND jsonb_typeof(plan -> 'edges') = 'array')`, true},
	{func(p *driver.Pruned) *int64 { return &p.Steps }, `DELETE FROM runbook_steps WHERE runbook_id = ANY($1)`, false},
	{func(p *driver.Pruned) *int64 { return &p.Runbooks }, `DELETE FROM runbooks WHERE id = ANY($1) AND finished_at IS NOT NULL`, false},
}

// pruneReceiptsSQL deletes receipts past their window whose runbook's
// lineage is gone: neither the runbook nor a regeneration of its lineage
// (which inherits its keys) is left to need them. The BRIN index on
// created_at finds them by age.
const pruneReceiptsSQL = `
	DELETE FROM action_receipts WHERE (handler, idempotency_key) IN (
		SELECT a.handler, a.idempotency_key FROM action_receipts a
		WHERE a.created_at < $1 AND a.scope IN ('runbook_step', 'runbook')
		  AND NOT EXISTS (SELECT 1 FROM runbooks r WHERE r.id = a.runbook_id)
		  AND NOT EXISTS (SELECT 1 FROM runbooks r WHERE r.lineage_root = a.runbook_id)
		ORDER BY a.created_at
		LIMIT $2)`

// pruneLedgerSQL deletes ledger rows past the ledger's window, oldest
// first: the order is what makes PostgreSQL walk the index on finished_at
// under a generic plan, where `finished_at < $1` is guessed at a third of
// the table and a scan from the table's start looked cheaper.
const pruneLedgerSQL = `
	DELETE FROM step_attempt_rows WHERE ctid IN (
		SELECT ctid FROM step_attempt_rows WHERE finished_at < $1 ORDER BY finished_at LIMIT $2)`

// Prune deletes one batch: up to o.Limit runbooks that finished before
// o.FinishedBefore, oldest first, and everything they own (steps, edges,
// invocations, the notifications of their invocations, events and
// mutations); then up to o.Limit receipts, and up to o.Limit ledger rows,
// past their windows (driver.PruneOptions). A runbook that has not finished is
// never touched. Each part is a short transaction, the runbooks' under
// their locks, so that it can run beside a daemon; call it until Done.
func (s *Store) Prune(ctx context.Context, o driver.PruneOptions) (driver.Pruned, error) {
	var p driver.Pruned
	err := s.inTx(ctx, func(tx *Tx) error {
		rows, err := tx.tx.Query(ctx, pruneRunbooksSQL, o.FinishedBefore, o.Limit)
		if err != nil {
			return translate(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil || len(ids) == 0 {
			return translate(err)
		}
		if err := tx.LockRunbooks(ctx, ids); err != nil {
			return err
		}
		// Read again under the locks: a command (a retry, a resolution)
		// that held one while the batch was picked may have reopened its
		// runbook since, and its steps, events and ledger are live again.
		// Deleted, it would then "complete" with no steps
		// (docs/reliability.md, "Under attack").
		rows, err = tx.tx.Query(ctx, pruneStillFinishedSQL, ids, o.FinishedBefore)
		if err != nil {
			return translate(err)
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil || len(ids) == 0 {
			return translate(err)
		}
		var b pgx.Batch
		for _, d := range pruneRowsSQL {
			count := d.count(&p)
			if d.selects {
				b.Queue(d.sql, ids).QueryRow(func(row pgx.Row) error { return row.Scan(count) })
				continue
			}
			b.Queue(d.sql, ids).Exec(func(tag pgconn.CommandTag) error {
				*count = tag.RowsAffected()
				return nil
			})
		}
		return translate(tx.tx.SendBatch(ctx, &b).Close())
	})
	if err != nil {
		return driver.Pruned{}, err
	}
	if !o.ReceiptsBefore.IsZero() {
		tag, err := s.pool.Exec(ctx, pruneReceiptsSQL, o.ReceiptsBefore, o.Limit)
		if err != nil {
			return p, translate(err)
		}
		p.Receipts = tag.RowsAffected()
	}
	if !o.LedgerBefore.IsZero() {
		tag, err := s.pool.Exec(ctx, pruneLedgerSQL, o.LedgerBefore, o.Limit)
		if err != nil {
			return p, translate(err)
		}
		p.Attempts = tag.RowsAffected()
	}
	return p, nil
}
