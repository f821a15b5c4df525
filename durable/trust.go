package durable

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runbookdev/runbook/rbtype"
)

// Earned trust (migration 023; docs/design/semantics.md section 17). A
// count moves in the transaction of what moved it: the gate's decision,
// or the advance that recorded a failed attempt. Each change is one
// statement on one row (an upsert that adds one, or an update that resets
// it under the row's lock), so two decisions at once never lose one; the
// same statement writes TRUST_EARNED when the count reaches the policy's
// threshold, or TRUST_LOST when a reset takes away a count the policy was
// counting towards, as a row of the event ledger of its own
// (runbook_event_rows, events.go's layout).

// approveTrustSQL adds an approval: $1 tenant, $2 verb, $3 runbook, $4
// step, $5 worker, $6 the threshold (0: no rule), $7 the reason.
const approveTrustSQL = `
	WITH up AS (
		INSERT INTO verb_trust AS v (tenant, verb, approvals, updated_at) VALUES ($1, $2, 1, now())
		ON CONFLICT (tenant, verb) DO UPDATE SET approvals = v.approvals + 1, updated_at = now()
		RETURNING v.approvals)
	INSERT INTO runbook_event_rows (runbook_id, first_id, last_id, n, at, events)
	SELECT $3, x.id, x.id, 1, clock_timestamp(), jsonb_build_array(jsonb_build_array('TRUST_EARNED', $4::text, NULL, $5::text,
		jsonb_build_object('verb', $2::text, 'approvals', up.approvals, 'after', $6::int, 'reason', $7::text)))
	FROM up, LATERAL (SELECT nextval('runbook_event_ids') * 1024 AS id) x WHERE $6::int > 0 AND up.approvals = $6::int`

// resetTrustSQL resets a count that is above zero; its parameters are
// approveTrustSQL's.
const resetTrustSQL = `
	WITH old AS (
		SELECT approvals FROM verb_trust WHERE tenant = $1 AND verb = $2 AND approvals > 0 FOR UPDATE),
	up AS (
		UPDATE verb_trust v SET approvals = 0, resets = v.resets + 1, reset_at = now(), updated_at = now()
		FROM old WHERE v.tenant = $1 AND v.verb = $2
		RETURNING old.approvals AS lost)
	INSERT INTO runbook_event_rows (runbook_id, first_id, last_id, n, at, events)
	SELECT $3, x.id, x.id, 1, clock_timestamp(), jsonb_build_array(jsonb_build_array('TRUST_LOST', $4::text, NULL, $5::text,
		jsonb_build_object('verb', $2::text, 'approvals_lost', up.lost, 'after', $6::int, 'earned', up.lost >= $6::int, 'reason', $7::text)))
	FROM up, LATERAL (SELECT nextval('runbook_event_ids') * 1024 AS id) x WHERE $6::int > 0`

// queueTrust queues an advance's trust changes, in order.
func queueTrust(b *pgx.Batch, changes []rbtype.TrustChange) {
	ignore := func(pgconn.CommandTag) error { return nil }
	for _, c := range changes {
		sql := resetTrustSQL
		if c.Approved {
			sql = approveTrustSQL
		}
		b.Queue(sql, tenantOrDefault(c.Tenant), c.Verb, c.RunbookID, nullString(c.StepKey), nullString(c.WorkerID), c.After, c.Reason).Exec(ignore)
	}
}

func tenantOrDefault(t string) string {
	if t == "" {
		return rbtype.DefaultTenant
	}
	return t
}

// TrustCounts reads a tenant's counts for verbs (every verb, with verbs
// nil).
func (s *Store) TrustCounts(ctx context.Context, tenant string, verbs []string) (map[string]rbtype.TrustCount, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT verb, approvals, resets FROM verb_trust
		WHERE tenant = $1 AND ($2::text[] IS NULL OR verb = ANY($2))`, tenantOrDefault(tenant), verbs)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]rbtype.TrustCount{}
	for rows.Next() {
		var c rbtype.TrustCount
		if err := rows.Scan(&c.Verb, &c.Approvals, &c.Resets); err != nil {
			return nil, translate(err)
		}
		out[c.Verb] = c
	}
	return out, translate(rows.Err())
}
