package durable

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/driver"
)

// CacheEntries returns the stored result cache entries for keys, by key.
// Expired entries are returned too: the runtime decides with its own
// clock, and the sweep deletes them.
func (t *Tx) CacheEntries(ctx context.Context, tenant string, keys []string) (map[string]driver.CacheEntry, error) {
	out := map[string]driver.CacheEntry{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := t.tx.Query(ctx, `
		SELECT tenant, key, verb, definition_hash, result, runbook_id, step_key, attempt, created_at, expires_at
		FROM result_cache WHERE tenant = $1 AND key = ANY($2)`, tenant, keys)
	if err != nil {
		return nil, translate(err)
	}
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.CacheEntry, error) {
		var c driver.CacheEntry
		var result []byte
		err := r.Scan(&c.Tenant, &c.Key, &c.Verb, &c.DefinitionHash, &result, &c.RunbookID, &c.StepKey, &c.Attempt, &c.CreatedAt, &c.ExpiresAt)
		c.Result = result
		return c, err
	})
	if err != nil {
		return nil, translate(err)
	}
	for _, c := range entries {
		out[c.Key] = c
	}
	return out, nil
}

// writeCacheSQL stores entries; a newer result for a key replaces the old.
const writeCacheSQL = `
	INSERT INTO result_cache (tenant, key, verb, definition_hash, result, runbook_id, step_key, attempt, created_at, expires_at)
	SELECT tn, k, v, h, r::jsonb, rb, s, a, c, e
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::uuid[], $7::text[], $8::int[],
		$9::timestamptz[], $10::timestamptz[]) AS u(tn, k, v, h, r, rb, s, a, c, e)
	ON CONFLICT (tenant, key) DO UPDATE SET
		verb = excluded.verb, definition_hash = excluded.definition_hash, result = excluded.result,
		runbook_id = excluded.runbook_id, step_key = excluded.step_key, attempt = excluded.attempt,
		created_at = excluded.created_at, expires_at = excluded.expires_at`

// cacheArgs lays entries out as writeCacheSQL's columns, one per key: an
// upsert may not touch a row twice in one statement, and two steps with
// equal arguments may finish in one transaction (the later one wins).
func cacheArgs(entries []driver.CacheEntry) []any {
	last := map[[2]string]int{}
	for i, c := range entries {
		last[[2]string{c.Tenant, c.Key}] = i
	}
	if len(last) < len(entries) {
		unique := entries[:0:0]
		for i, c := range entries {
			if last[[2]string{c.Tenant, c.Key}] == i {
				unique = append(unique, c)
			}
		}
		entries = unique
	}
	n := len(entries)
	tenants, keys, verbs, hashes, results, steps := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	runbooks := make([]uuid.UUID, n)
	attempts := make([]int32, n)
	created := make([]time.Time, n)
	expires := make([]*time.Time, n)
	for i, c := range entries {
		tenants[i], keys[i], verbs[i], hashes[i], results[i] = c.Tenant, c.Key, c.Verb, c.DefinitionHash, string(c.Result)
		runbooks[i], steps[i], attempts[i], created[i], expires[i] = c.RunbookID, c.StepKey, int32(c.Attempt), c.CreatedAt, c.ExpiresAt
	}
	return []any{tenants, keys, verbs, hashes, results, runbooks, steps, attempts, created, expires}
}

// PruneCache deletes up to limit entries that expired before now.
func (s *Store) PruneCache(ctx context.Context, now time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM result_cache WHERE ctid IN (
			SELECT ctid FROM result_cache WHERE expires_at < $1 LIMIT $2)`, now, limit)
	if err != nil {
		return 0, translate(err)
	}
	return tag.RowsAffected(), nil
}
