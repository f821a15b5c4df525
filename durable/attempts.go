package durable

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runbookdev/runbook/driver"
)

// writeAttemptsSQL records finished attempts in the job ledger's table of
// stored rows (step_attempt_rows; step_attempts is the view that adds the
// rows kept in completed steps, migration 027). An attempt
// recorded when it parked is completed when it resumes: its outcome, end
// and error are the resume's, and usage the resume reports is added to
// what the park reported.
const writeAttemptsSQL = `
	INSERT INTO step_attempt_rows (attempt_id, runbook_id, tenant, actor, step_key, verb, attempt, worker_id,
		started_at, finished_at, outcome, error_code, cache, tokens_in, tokens_out, model, cost_usd, credits,
		correlation_id, trace_id, span_id, args_hash, result_hash)
	SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[],
		$9::timestamptz[], $10::timestamptz[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::bigint[],
		$16::text[], $17::numeric[], $18::numeric[], $19::text[], $20::text[], $21::text[], $22::text[], $23::text[])
	ON CONFLICT (runbook_id, step_key, attempt) DO UPDATE SET
		outcome = excluded.outcome, finished_at = excluded.finished_at, error_code = excluded.error_code,
		args_hash = coalesce(excluded.args_hash, step_attempt_rows.args_hash),
		result_hash = coalesce(excluded.result_hash, step_attempt_rows.result_hash),
		tokens_in = nullif(least(coalesce(step_attempt_rows.tokens_in, 0)::numeric + coalesce(excluded.tokens_in, 0), ` + maxBigint + `)::bigint, 0),
		tokens_out = nullif(least(coalesce(step_attempt_rows.tokens_out, 0)::numeric + coalesce(excluded.tokens_out, 0), ` + maxBigint + `)::bigint, 0),
		model = coalesce(excluded.model, step_attempt_rows.model),
		cost_usd = nullif(coalesce(step_attempt_rows.cost_usd, 0) + coalesce(excluded.cost_usd, 0), 0),
		credits = nullif(coalesce(step_attempt_rows.credits, 0) + coalesce(excluded.credits, 0), 0)`

func attemptArgs(as []driver.Attempt) []any {
	n := len(as)
	ids, runbooks := make([][16]byte, n), make([][16]byte, n)
	tenants, actors, steps, verbs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	workers := make(pgtype.FlatArray[pgtype.Text], n)
	attempts := make([]int32, n)
	started, finished := make(pgtype.FlatArray[pgtype.Timestamptz], n), make([]time.Time, n)
	outcomes, caches := make([]string, n), make([]string, n)
	codes, models := make(pgtype.FlatArray[pgtype.Text], n), make(pgtype.FlatArray[pgtype.Text], n)
	tokIn, tokOut := make(pgtype.FlatArray[pgtype.Int8], n), make(pgtype.FlatArray[pgtype.Int8], n)
	costs, credits := make(pgtype.FlatArray[pgtype.Float8], n), make(pgtype.FlatArray[pgtype.Float8], n)
	correlations, traces, spans := make(pgtype.FlatArray[pgtype.Text], n), make(pgtype.FlatArray[pgtype.Text], n), make(pgtype.FlatArray[pgtype.Text], n)
	argsHashes, resultHashes := make(pgtype.FlatArray[pgtype.Text], n), make(pgtype.FlatArray[pgtype.Text], n)
	for i, a := range as {
		argsHashes[i], resultHashes[i] = nullableText(a.ArgsHash), nullableText(a.ResultHash)
		correlations[i], traces[i], spans[i] = nullableText(a.CorrelationID), nullableText(a.TraceID), nullableText(a.SpanID)
		ids[i], runbooks[i], tenants[i], actors[i], steps[i], verbs[i] = a.ID, a.RunbookID, a.Tenant, a.Actor, a.StepKey, a.Verb
		attempts[i], workers[i], started[i], finished[i] = int32(a.Attempt), nullableText(a.WorkerID), nullableTime(a.StartedAt), a.FinishedAt
		outcomes[i], codes[i], caches[i], models[i] = a.Outcome, nullableText(a.ErrorCode), a.Cache, nullableText(a.Usage.Model)
		tokIn[i], tokOut[i] = nullableInt(a.Usage.TokensIn), nullableInt(a.Usage.TokensOut)
		costs[i], credits[i] = nullableFloat(a.Usage.CostUSD), nullableFloat(a.Usage.Credits)
	}
	return []any{ids, runbooks, tenants, actors, steps, verbs, attempts, workers, started, finished, outcomes, codes, caches,
		tokIn, tokOut, models, costs, credits, correlations, traces, spans, argsHashes, resultHashes}
}

// costColumns sum attempts into a driver.Cost. The sums saturate, at the
// largest bigint and at 10^300, rather than fail: the ledger may hold rows
// from before usage was bounded at the door (docs/daemon.md, "Limits"),
// and one absurd figure must not make every report of its tenant an error.
const costColumns = `least(coalesce(sum(cost_usd), 0), 1e300)::float8, least(coalesce(sum(credits), 0), 1e300)::float8,
	least(coalesce(sum(tokens_in), 0), ` + maxBigint + `)::bigint, least(coalesce(sum(tokens_out), 0), ` + maxBigint + `)::bigint, count(*),
	count(*) FILTER (WHERE cache = 'hit')`

// maxBigint is the largest bigint, where token counts saturate.
const maxBigint = "9223372036854775807"

// runbookCostSQL sums a runbook's attempts: its stored ledger rows by the
// primary key's prefix, its implicit ones through its steps' index.
const runbookCostSQL = `SELECT ` + costColumns + ` FROM step_attempts WHERE runbook_id = $1`

// RunbookCost sums a runbook's attempts.
func (s *Store) RunbookCost(ctx context.Context, id uuid.UUID) (driver.Cost, error) {
	return viewReader{s.pool}.RunbookCost(ctx, id)
}

// RunbookCost sums a runbook's attempts, as Store.RunbookCost does.
func (r viewReader) RunbookCost(ctx context.Context, id uuid.UUID) (driver.Cost, error) {
	var c driver.Cost
	err := r.q.QueryRow(ctx, runbookCostSQL, id).
		Scan(&c.CostUSD, &c.Credits, &c.TokensIn, &c.TokensOut, &c.Attempts, &c.CacheHits)
	return c, translate(err)
}

// costGroups are the expressions attempts are grouped by, one for each of
// driver.CostGroups (TestCostGroupsAllKnown holds them together).
var costGroups = map[string]string{
	"tenant": "tenant",
	"actor":  "actor",
	"verb":   "verb",
	"day":    "to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
	"month":  "to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM')",
}

// Costs sums attempts by tenant, actor, verb, day or month (UTC).
func (s *Store) Costs(ctx context.Context, q driver.CostQuery) ([]driver.Cost, error) {
	group, ok := costGroups[q.GroupBy]
	if !ok {
		return nil, fmt.Errorf("%w: group_by %q must be one of %s", driver.ErrBadRequest, q.GroupBy, strings.Join(driver.CostGroups, ", "))
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+group+` AS g, `+costColumns+`
		FROM step_attempts
		WHERE ($1 = '' OR tenant = $1)
		  AND ($2::timestamptz IS NULL OR finished_at >= $2)
		  AND ($3::timestamptz IS NULL OR finished_at < $3)
		GROUP BY g ORDER BY g`, q.Tenant, q.From, q.To)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Cost, error) {
		var c driver.Cost
		err := r.Scan(&c.Group, &c.CostUSD, &c.Credits, &c.TokensIn, &c.TokensOut, &c.Attempts, &c.CacheHits)
		return c, err
	})
	return out, translate(err)
}
