package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// Budgets (docs/design/semantics.md section 11). What a runbook spent is
// on its row; what a tenant spent, by day, in tenant_spend: both are added
// to in the transaction that records an attempt reporting usage
// (queueSpend), so that the check before each attempt reads a row and a
// month of days, never the ledger. The budgets an admin set are in
// tenant_budgets, each change of one in budget_changes.

// tenantBudgetsSQL reads, in one statement, the budgets set for the
// tenants of runbooks ($1), and what those tenants spent on day $2 and in
// its month: a row per budget set, with its scope, and a row per tenant's
// spend, with none. The spend of a tenant with no budget set is read only
// with $3 (the policy caps some tenant's day or month): an advance reads
// budgets before every attempt, and most tenants have none. So are, in a
// row of their own by tenant, the attempts running that reserved nothing
// in the tenant's unfinished runbooks other than $1
// (tenant_unreserved_attempts, budget_unreserved.go in machine/).
const tenantBudgetsSQL = `
	WITH tenants AS (SELECT DISTINCT tenant FROM runbooks WHERE id = ANY($1)),
	budgets AS (SELECT b.tenant, b.scope, b.cost_usd, b.tokens, b.credits FROM tenant_budgets b JOIN tenants USING (tenant))
	SELECT tenant, scope, cost_usd::float8, tokens, credits::float8,
		NULL::float8, NULL::bigint, NULL::float8, NULL::float8, NULL::bigint, NULL::float8, NULL::bigint
	FROM budgets
	UNION ALL
	SELECT s.tenant, NULL, NULL, NULL, NULL,
		coalesce(sum(s.cost_usd) FILTER (WHERE s.day = $2), 0)::float8, coalesce(sum(s.tokens) FILTER (WHERE s.day = $2), 0)::bigint,
		coalesce(sum(s.credits) FILTER (WHERE s.day = $2), 0)::float8,
		coalesce(sum(s.cost_usd), 0)::float8, coalesce(sum(s.tokens), 0)::bigint, coalesce(sum(s.credits), 0)::float8, NULL
	FROM tenant_spend s JOIN tenants USING (tenant)
	WHERE ($3 OR s.tenant IN (SELECT tenant FROM budgets))
	  AND s.day >= date_trunc('month', $2::date)::date AND s.day <= $2
	GROUP BY s.tenant
	UNION ALL
	SELECT u.tenant, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, sum(u.running)::bigint
	FROM tenant_unreserved_attempts u JOIN tenants USING (tenant) JOIN runbooks r ON r.id = u.runbook_id
	WHERE ($3 OR u.tenant IN (SELECT tenant FROM budgets))
	  AND u.running > 0 AND r.finished_at IS NULL AND u.runbook_id <> ALL($1)
	GROUP BY u.tenant`

// lockCappedTenantsSQL takes, for the rest of the transaction, a lock of
// each tenant of the runbooks ($1) whose day or month is capped: by the
// policy ($2, as for tenantBudgetsSQL) or by a budget set. It is queued
// before the spend is read, so that of two advances of a capped tenant the
// second reads what the first spent and reserved: two workers cannot both
// start attempts against the same remainder (docs/design/semantics.md,
// "Budgets hold under concurrency"). The locks are taken in the order of
// the tenants' names, after the runbooks' own, as every advance takes
// them, so two advances cannot deadlock. A tenant with no cap is never
// locked: its advances run side by side as before.
const lockCappedTenantsSQL = `
	SELECT pg_advisory_xact_lock(hashtextextended('rbd.tenant-budget:' || tenant, 0))
	FROM (SELECT DISTINCT r.tenant FROM runbooks r WHERE r.id = ANY($1)
		AND ($2 OR EXISTS (SELECT 1 FROM tenant_budgets b WHERE b.tenant = r.tenant AND b.scope IN ('day', 'month')))
		ORDER BY r.tenant) t`

// queueBudgets adds to a load the budgets set for the runbooks' tenants
// and their spend for the day and month of day (UTC): every tenant's with
// allSpend, else only that of tenants with a budget set.
func queueBudgets(b *pgx.Batch, ids any, day time.Time, allSpend bool, st *driver.AdvanceState) {
	st.Budgets = map[string]driver.TenantBudget{}
	date := pgtype.Date{Time: utcDate(day), Valid: true}
	b.Queue(lockCappedTenantsSQL, ids, allSpend).Exec(func(pgconn.CommandTag) error { return nil })
	b.Queue(tenantBudgetsSQL, ids, date, allSpend).Query(func(rows pgx.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var tenant string
			var scope *rbtype.BudgetScope
			var set, d, m measureColumns
			var unreserved *int64
			if err := rows.Scan(&tenant, &scope, &set.cost, &set.tokens, &set.credits,
				&d.cost, &d.tokens, &d.credits, &m.cost, &m.tokens, &m.credits, &unreserved); err != nil {
				return err
			}
			tb := st.Budgets[tenant]
			switch {
			case unreserved != nil: // the count of attempts that reserved nothing
				tb.Unreserved = int(*unreserved)
			case scope == nil: // a spend row
				tb.Day, tb.Month = d.spend(), m.spend()
			default:
				if tb.Set == nil {
					tb.Set = map[rbtype.BudgetScope]rbtype.Budget{}
				}
				tb.Set[*scope] = rbtype.Budget{CostUSD: set.cost, Tokens: set.tokens, Credits: set.credits}
			}
			st.Budgets[tenant] = tb
		}
		return rows.Err()
	})
}

// measureColumns scans the three measures of a row of tenantBudgetsSQL: a
// budget's caps (NULL where it caps nothing), or a spend, NULL in the
// other kind of row.
type measureColumns struct {
	cost, credits *float64
	tokens        *int64
}

func (c measureColumns) spend() rbtype.Spend {
	var s rbtype.Spend
	if c.cost != nil {
		s.CostUSD = *c.cost
	}
	if c.tokens != nil {
		s.Tokens = *c.tokens
	}
	if c.credits != nil {
		s.Credits = *c.credits
	}
	return s
}

func utcDate(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// scanSetBudget reads tenant, scope and the three measures.
func scanSetBudget(row pgx.Row, more ...any) (tenant string, scope rbtype.BudgetScope, b rbtype.Budget, err error) {
	var cost, credits *float64
	var tokens *int64
	err = row.Scan(append([]any{&tenant, &scope, &cost, &tokens, &credits}, more...)...)
	return tenant, scope, rbtype.Budget{CostUSD: cost, Tokens: tokens, Credits: credits}, err
}

// spendSQL adds what attempts used to their runbooks' spend and their
// tenants' days.
const spendSQL = `
	WITH u AS (
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::date[], $4::float8[], $5::bigint[], $6::float8[])
			AS u(runbook_id, tenant, day, cost, tokens, credits)),
	r AS (
		UPDATE runbooks SET spent_cost_usd = spent_cost_usd + s.cost, spent_tokens = spent_tokens + s.tokens,
			spent_credits = spent_credits + s.credits
		FROM (SELECT runbook_id, sum(cost) AS cost, sum(tokens) AS tokens, sum(credits) AS credits FROM u GROUP BY runbook_id) s
		WHERE runbooks.id = s.runbook_id)
	INSERT INTO tenant_spend AS t (tenant, day, cost_usd, tokens, credits)
	SELECT tenant, day, sum(cost), sum(tokens), sum(credits) FROM u GROUP BY tenant, day ORDER BY tenant, day
	ON CONFLICT (tenant, day) DO UPDATE SET cost_usd = t.cost_usd + excluded.cost_usd,
		tokens = t.tokens + excluded.tokens, credits = t.credits + excluded.credits`

// queueSpend adds the usage of the attempts that report some to their
// runbooks and tenants; attempts that used nothing write nothing.
//
// The reservations of attempts starting, and given back by attempts
// ending (negative), are added to the cost spent the same way: spend as
// the budgets read it is what attempts used plus what those running
// reserved (docs/design/semantics.md, "Budgets hold under concurrency").
func queueSpend(b *pgx.Batch, attempts []driver.Attempt, reservations []driver.Reservation) {
	var runbooks [][16]byte
	var tenants []string
	var days []pgtype.Date
	var costs, credits []float64
	var tokens []int64
	for _, a := range attempts {
		u := a.Usage
		if u.CostUSD == 0 && u.Credits == 0 && u.TokensIn == 0 && u.TokensOut == 0 {
			continue
		}
		runbooks = append(runbooks, a.RunbookID)
		tenants = append(tenants, a.Tenant)
		days = append(days, pgtype.Date{Time: utcDate(a.FinishedAt), Valid: true})
		costs, credits, tokens = append(costs, u.CostUSD), append(credits, u.Credits), append(tokens, u.TokensIn+u.TokensOut)
	}
	for _, r := range reservations {
		runbooks = append(runbooks, r.RunbookID)
		tenants = append(tenants, r.Tenant)
		days = append(days, pgtype.Date{Time: utcDate(r.Day), Valid: true})
		costs, credits, tokens = append(costs, r.CostUSD), append(credits, 0), append(tokens, 0)
	}
	if len(runbooks) == 0 {
		return
	}
	b.Queue(spendSQL, runbooks, tenants, days, costs, tokens, credits)
}

// The count of attempts running that reserved nothing, by runbook
// (migration 028), and the wake-up of runbooks waiting for one to end.
const (
	// countUnreservedSQL moves runbooks' counts ($2, never below zero)
	// and marks those that wait ($3).
	countUnreservedSQL = `
		WITH c AS (SELECT * FROM unnest($1::uuid[], $2::int[], $3::bool[], $4::text[]) AS c(runbook_id, running, waits, tenant))
		INSERT INTO tenant_unreserved_attempts AS t (runbook_id, tenant, running, waiting)
		SELECT runbook_id, tenant, greatest(running, 0), waits FROM c ORDER BY runbook_id
		ON CONFLICT (runbook_id) DO UPDATE
		SET running = greatest(t.running + (SELECT c.running FROM c WHERE c.runbook_id = t.runbook_id), 0),
			waiting = t.waiting OR excluded.waiting`

	// wakeUnreservedWaitersSQL wakes the runbooks of tenants ($1) that
	// wait for one of the tenant's attempts to end, now that one has.
	wakeUnreservedWaitersSQL = `
		WITH w AS (
			UPDATE tenant_unreserved_attempts SET waiting = false
			WHERE tenant = ANY($1) AND waiting RETURNING runbook_id)
		UPDATE runbook_wakeups k SET wake_at = now() FROM w WHERE k.runbook_id = w.runbook_id AND k.wake_at > now()`

	// dropIdleUnreservedSQL deletes the rows that count nothing and wait
	// for nothing of runbooks ($1) and of tenants whose waiters were woken
	// ($2).
	dropIdleUnreservedSQL = `
		DELETE FROM tenant_unreserved_attempts
		WHERE (runbook_id = ANY($1) OR tenant = ANY($2)) AND running = 0 AND NOT waiting`
)

// queueUnreserved writes an advance's changes of the counts of attempts
// that reserved nothing: it wakes the waiters of the tenants whose count
// went down first, so that a runbook that starts waiting in this advance
// waits for the next end, then moves the counts, then drops what is idle.
func queueUnreserved(b *pgx.Batch, changes []driver.UnreservedChange) {
	type sum struct {
		tenant  string
		running int
		waits   bool
	}
	byRunbook := map[uuid.UUID]*sum{}
	var order []uuid.UUID
	released := map[string]bool{}
	for _, c := range changes {
		s := byRunbook[c.RunbookID]
		if s == nil {
			s = &sum{tenant: c.Tenant}
			byRunbook[c.RunbookID] = s
			order = append(order, c.RunbookID)
		}
		s.running += c.Running
		s.waits = s.waits || c.Waits
		if c.Running < 0 {
			released[c.Tenant] = true
		}
	}
	woken := slices.Sorted(maps.Keys(released))
	if len(woken) > 0 {
		b.Queue(wakeUnreservedWaitersSQL, woken).Exec(func(pgconn.CommandTag) error { return nil })
	}
	slices.SortFunc(order, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	ids := make([][16]byte, len(order))
	running := make([]int32, len(order))
	waits := make([]bool, len(order))
	tenants := make([]string, len(order))
	for i, id := range order {
		s := byRunbook[id]
		ids[i], running[i], waits[i], tenants[i] = id, int32(s.running), s.waits, s.tenant
	}
	ignore := func(pgconn.CommandTag) error { return nil }
	b.Queue(countUnreservedSQL, ids, running, waits, tenants).Exec(ignore)
	b.Queue(dropIdleUnreservedSQL, ids, woken).Exec(ignore)
}

// TenantBudgets reads tenants' budgets set and spend for the day and
// month of day.
func (s *Store) TenantBudgets(ctx context.Context, tenants []string, day time.Time) (map[string]driver.TenantBudget, error) {
	return viewReader{s.pool}.TenantBudgets(ctx, tenants, day)
}

// TenantBudgets reads tenants' budgets set and spend, as
// Store.TenantBudgets does.
func (r viewReader) TenantBudgets(ctx context.Context, tenants []string, day time.Time) (map[string]driver.TenantBudget, error) {
	out := make(map[string]driver.TenantBudget, len(tenants))
	for _, t := range tenants {
		out[t] = driver.TenantBudget{Set: map[rbtype.BudgetScope]rbtype.Budget{}}
	}
	rows, err := r.q.Query(ctx, `SELECT tenant, scope, cost_usd::float8, tokens, credits::float8 FROM tenant_budgets WHERE tenant = ANY($1)`, tenants)
	if err != nil {
		return nil, translate(err)
	}
	for rows.Next() {
		tenant, scope, b, err := scanSetBudget(rows)
		if err != nil {
			rows.Close()
			return nil, translate(err)
		}
		out[tenant].Set[scope] = b
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	date := pgtype.Date{Time: utcDate(day), Valid: true}
	rows, err = r.q.Query(ctx, `SELECT tenant,
		coalesce(sum(cost_usd) FILTER (WHERE day = $2), 0)::float8, coalesce(sum(tokens) FILTER (WHERE day = $2), 0)::bigint,
		coalesce(sum(credits) FILTER (WHERE day = $2), 0)::float8,
		coalesce(sum(cost_usd), 0)::float8, coalesce(sum(tokens), 0)::bigint, coalesce(sum(credits), 0)::float8
		FROM tenant_spend WHERE tenant = ANY($1) AND day >= date_trunc('month', $2::date)::date AND day <= $2
		GROUP BY tenant`, tenants, date)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var tenant string
		var d, m rbtype.Spend
		if err := rows.Scan(&tenant, &d.CostUSD, &d.Tokens, &d.Credits, &m.CostUSD, &m.Tokens, &m.Credits); err != nil {
			return nil, translate(err)
		}
		tb := out[tenant]
		tb.Day, tb.Month = d, m
		out[tenant] = tb
	}
	return out, translate(rows.Err())
}

// SetBudgets lists the budgets admins set, of one tenant or of all.
func (s *Store) SetBudgets(ctx context.Context, tenant string) ([]driver.SetBudget, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant, scope, cost_usd::float8, tokens, credits::float8, updated_by, updated_at
		FROM tenant_budgets WHERE $1 = '' OR tenant = $1 ORDER BY tenant, scope`, tenant)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.SetBudget, error) {
		var sb driver.SetBudget
		var err error
		sb.Tenant, sb.Scope, sb.Budget, err = scanSetBudget(r, &sb.UpdatedBy, &sb.UpdatedAt)
		return sb, err
	})
	return out, translate(err)
}

// ChangeBudget sets or takes away one of a tenant's budgets, and records
// the change with what it replaced, in one transaction.
func (s *Store) ChangeBudget(ctx context.Context, c driver.BudgetChange) (*rbtype.Budget, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, translate(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var before *rbtype.Budget
	_, _, b, err := scanSetBudget(tx.QueryRow(ctx, `SELECT tenant, scope, cost_usd::float8, tokens, credits::float8
		FROM tenant_budgets WHERE tenant = $1 AND scope = $2 FOR UPDATE`, c.Tenant, string(c.Scope)))
	switch {
	case err == nil:
		before = &b
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, translate(err)
	}
	if c.Budget == nil {
		_, err = tx.Exec(ctx, `DELETE FROM tenant_budgets WHERE tenant = $1 AND scope = $2`, c.Tenant, string(c.Scope))
	} else {
		_, err = tx.Exec(ctx, `INSERT INTO tenant_budgets (tenant, scope, cost_usd, tokens, credits, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (tenant, scope) DO UPDATE SET cost_usd = excluded.cost_usd, tokens = excluded.tokens,
				credits = excluded.credits, updated_by = excluded.updated_by, updated_at = now()`,
			c.Tenant, string(c.Scope), c.Budget.CostUSD, c.Budget.Tokens, c.Budget.Credits, c.Actor)
	}
	if err != nil {
		return nil, translate(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO budget_changes (tenant, scope, actor, before, after) VALUES ($1, $2, $3, $4, $5)`,
		c.Tenant, string(c.Scope), c.Actor, jsonOrNil(before), jsonOrNil(c.Budget)); err != nil {
		return nil, translate(err)
	}
	return before, translate(tx.Commit(ctx))
}

func jsonOrNil(b *rbtype.Budget) []byte {
	if b == nil {
		return nil
	}
	raw, _ := json.Marshal(b) // numbers only
	return raw
}
