package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/history"
)

// historySteps is the length of the history's finished runbooks: ten-step
// chains, as BENCHMARKS.md asks.
const historySteps = 10

// history measures the hot path on day 400, not only on day 1 (BENCHMARKS.md):
// the chain throughput and the resume again, the same way as on their
// fresh schemas, but on a schema that already holds -history (100,000)
// finished ten-step runbooks with all their rows: steps, edges, events,
// invocations, processed notifications, receipts and ledger rows
// (durable/history). The schema is filled once per rbload run and every
// history run reuses it; each run adds its own runbooks to it (1,000 of
// them, 1 % of the history), which stay, finished, for the next run, as
// in a deployment. Each figure is divided by this run's figure on an
// empty schema, when the run measured it (-only with throughput and
// resume).
func (l *lab) history(ctx context.Context, r *report) error {
	schema, err := l.fillHistory(ctx, r)
	if err != nil {
		return err
	}
	of := fmt.Sprintf("over %s finished runbooks", withCommas(int64(l.o.historyRunbooks)))

	chain, err := compilePlan(chainSource(l.o.steps))
	if err != nil {
		return err
	}
	tp := runs{}
	for run := range l.o.runs {
		if _, err := l.throughputRun(ctx, schema, chain, "", l.o.runbooks, 1, tp); err != nil {
			return fmt.Errorf("chains %s: %w", of, err)
		}
		logf("chain %s, run %d: %s steps/s", of, run+1, format(tp["steps/s"][run]))
	}
	r.add(fmt.Sprintf("throughput, chain, %s (%d runbooks × %d no-op steps)", of, l.o.runbooks, l.o.steps), tp.median("steps/s"), "steps/s").
		note("%s", notes("1 rbd, as on an empty schema", tp.spread("steps/s")))
	r.add("  rbd CPU per step (chain, history)", tp.median("rbd cpu/step"), "µs")
	if len(tp["pg cpu/step"]) > 0 {
		r.add("  PostgreSQL CPU per step (chain, history)", tp.median("pg cpu/step"), "µs")
	}

	park, err := compilePlan(parkSource)
	if err != nil {
		return err
	}
	rs := runs{}
	for run := range l.o.runs {
		if err := l.resumeRun(ctx, schema, park, rs); err != nil {
			return fmt.Errorf("resume %s: %w", of, err)
		}
		logf("resume %s, run %d: p50 %.2f ms, p99 %.2f ms", of, run+1, rs["p50"][run], rs["p99"][run])
	}
	label := fmt.Sprintf("resume at %d notifications/s (%d parked) %s, ", l.o.rate, l.o.parkedCount, of)
	for _, p := range []string{"p50", "p95", "p99"} {
		r.add(label+p, rs.median(p), "ms").note("%s", rs.spread(p))
	}
	r.add("  rbd CPU per notification (history)", rs.median("rbd cpu"), "µs")
	if len(rs["postgres cpu"]) > 0 {
		r.add("  PostgreSQL CPU per notification (history)", rs.median("postgres cpu"), "µs")
	}
	l.historyRatios(r, tp.median("steps/s"), rs.median("p50"))
	return nil
}

// historyRatios adds the rows that divide the figures over history by
// this run's on empty schemas (BENCHMARKS.md: targets): chain steps/s at
// least 0.9 ×, resume p50 at most 1.2 ×. A figure this run did not
// measure on an empty schema leaves its row out.
func (l *lab) historyRatios(r *report, chainStepsPerSecond, resumeP50 float64) {
	if empty, ok := l.rbdStepsPerSecond["chain"]; ok {
		r.add("chain steps/s with history ÷ on an empty schema", chainStepsPerSecond/empty, "×").
			atLeast(0.9, "≥ 0.9 (target)").
			note("%s ÷ %s steps/s", format(chainStepsPerSecond), format(empty))
	}
	if l.rbdResumeP50 > 0 {
		r.add("resume p50 with history ÷ on an empty schema", resumeP50/l.rbdResumeP50, "×").
			atMost(1.2, "≤ 1.2 (target)").
			note("%.2f ms ÷ %.2f ms", resumeP50, l.rbdResumeP50)
	}
	if _, ok := l.rbdStepsPerSecond["chain"]; !ok && l.rbdResumeP50 == 0 {
		logf("history: no empty-schema figures in this run for the ratios (run it with throughput and resume)")
	}
}

// fillHistory makes the history's schema, or reuses -history-schema when
// it already holds the history (a server given with -database-url
// outlives the run). A new one is migrated, filled in SQL, then vacuumed
// and analyzed, as a deployment's autovacuum long since has done to its
// old rows (left to autovacuum, a million fresh rows a table would be
// vacuumed in the middle of a measured run), then checkpointed, so that
// the runs do not write the fill's pages out. It reports how long each
// part took, PostgreSQL's CPU time for it (less bent by a busy machine
// than the wall time), and how large the schema is.
func (l *lab) fillHistory(ctx context.Context, r *report) (string, error) {
	schema := l.o.historySchema
	if schema == "" {
		schema = l.schema("hist")
	}
	store, err := durable.Open(ctx, durable.Config{URL: l.url, Schema: schema, MaxConns: 1})
	if err != nil {
		return "", err
	}
	_, err = store.Migrate(ctx)
	store.Close()
	if err != nil {
		return "", err
	}
	conn, err := l.connIn(ctx, schema)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var finished int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM runbooks WHERE finished_at IS NOT NULL`).Scan(&finished); err != nil {
		return "", err
	}
	shape := history.Shape{Runbooks: l.o.historyRunbooks, Steps: historySteps}
	if l.o.historySchema != "" && finished >= shape.Runbooks {
		logf("history: %s already holds %s finished runbooks; reusing it", schema, withCommas(int64(finished)))
		r.add(fmt.Sprintf("history: %s finished runbooks, reused", withCommas(int64(finished))), 0, "s").
			note("-history-schema %s, filled by an earlier run", schema)
		return schema, nil
	}
	if finished > 0 {
		return "", fmt.Errorf("history: %s holds %d finished runbooks, fewer than -history %d: name an empty schema or a full one",
			schema, finished, shape.Runbooks)
	}
	cpuBefore, err := l.postgresCPU()
	if err != nil {
		return "", err
	}
	logf("history: filling %s with %s finished runbooks of %d steps", schema, withCommas(int64(shape.Runbooks)), shape.Steps)
	filled, err := history.Fill(ctx, conn, shape)
	if err != nil {
		return "", err
	}
	began := time.Now()
	tables, err := l.stats.SchemaTables(ctx, schema)
	if err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(tables, ", ")); err != nil {
		return "", err
	}
	vacuumed := time.Since(began)
	began = time.Now()
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return "", err
	}
	checkpointed := time.Since(began)
	var bytes int64
	err = conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&bytes)
	if err != nil {
		return "", err
	}
	// The backend's CPU is counted once it has exited and the postmaster
	// has reaped it.
	if err := conn.Close(ctx); err != nil {
		return "", err
	}
	time.Sleep(200 * time.Millisecond)
	cpuAfter, err := l.postgresCPU()
	if err != nil {
		return "", err
	}
	cpu := ""
	if cpuAfter > 0 { // a server on this machine (postgresCPU)
		cpu = fmt.Sprintf("PostgreSQL CPU %.1f s", (cpuAfter - cpuBefore).Seconds())
	}
	logf("history: filled in %s, vacuumed in %s, checkpointed in %s; %.0f MiB", filled.Round(time.Millisecond),
		vacuumed.Round(time.Millisecond), checkpointed.Round(time.Millisecond), float64(bytes)/(1<<20))
	r.add(fmt.Sprintf("history: %s finished runbooks × %d steps, filled", withCommas(int64(shape.Runbooks)), shape.Steps),
		(filled+vacuumed+checkpointed).Seconds(), "s").
		note("%s", notes("once per run, reused by every history run", fmt.Sprintf("SQL (durable/history) %.1f s, VACUUM ANALYZE %.1f s, CHECKPOINT %.1f s",
			filled.Seconds(), vacuumed.Seconds(), checkpointed.Seconds()), cpu, fmt.Sprintf("%.0f MiB with indexes", float64(bytes)/(1<<20))))
	return schema, nil
}

// connIn connects to the lab's database with schema as the search_path,
// as history.Fill asks.
func (l *lab) connIn(ctx context.Context, schema string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(l.url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["search_path"] = schema
	return pgx.ConnectConfig(ctx, cfg)
}
