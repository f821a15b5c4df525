package runtime_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/durable/history"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// historyTables are the tables that grow with every runbook run: a
// statement of the hot path that reads one of them whole slows as the
// deployment ages. (runbook_edge_rows is not one since migration 027: rbd
// writes no edge rows, the plans hold them; it is empty here, and read by
// its primary key's prefix when it is not.)
var historyTables = []string{"runbooks", "runbook_steps", "invocation_records",
	"completion_notifications", "action_receipts", "runbook_event_rows", "step_attempt_rows", "runbook_mutations"}

// TestHotStatementsKeepToIndexesWithHistory runs the engine's hot paths
// (submit, advance, park, resume in place and through the inbox, gates,
// cancel, retry, resolve, heartbeat, extend, regenerate, the sweeps, the
// claim, lease renewal, and a runbook's view) over a schema that already
// holds 20,000 finished runbooks with their steps, edges, invocations,
// notifications, receipts, attempts and events, analyzed. Every statement
// the store sent is then explained as PostgreSQL plans it once a prepared
// statement falls back to its generic plan (after five runs), and none may
// read a history table whole: a partial index whose predicate is a
// parameter in the SQL, or a lookup with no index, fails here, however
// fast it is on the empty tables of every other test.
func TestHotStatementsKeepToIndexesWithHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("fills tables with 20,000 finished runbooks")
	}
	log := durable.NewStatementLog()
	b := setup(t, func(c *runtime.Config) { c.PollInterval, c.SweepInterval = 20*time.Millisecond, 50*time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	b.ctx = ctx
	b.store = pgtest.StoreWith(t, func(c *durable.Config) { c.Statements = log })
	b.newEngine()
	took, err := history.Fill(b.ctx, pgtest.Conn(t, b.store), history.Shape{Runbooks: 20000, Steps: 3})
	require.NoError(t, err)
	t.Logf("history of 20,000 runbooks filled in %s", took.Round(time.Millisecond))

	hundred := 100.0
	_, err = b.store.ChangeBudget(b.ctx, driver.BudgetChange{Tenant: "acme", Scope: rbtype.BudgetDay,
		Budget: &rbtype.Budget{CostUSD: &hundred}, Actor: "test"})
	require.NoError(t, err)
	b.run(t)
	hotPaths(t, b)

	var scans []string
	explained := 0
	for _, st := range log.Statements() {
		if !explainable(st.SQL) {
			continue
		}
		plan, err := b.store.ExplainGeneric(b.ctx, st.SQL, st.Args)
		require.NoError(t, err, "%s", st.SQL)
		explained++
		t.Logf("explained: %.120s", oneLine(st.SQL))
		for _, table := range historyTables {
			if regexp.MustCompile(`Seq Scan on ` + table + `\b`).MatchString(plan) {
				scans = append(scans, table+" read whole by:\n"+oneLine(st.SQL)+"\n"+plan)
			}
		}
	}
	t.Logf("%d statements explained", explained)
	require.Greater(t, explained, 30, "the workload reached the hot paths")
	require.Empty(t, scans, "statements of the hot path that read a table of history whole under their generic plan")
}

// hotPaths drives the engine through every path a running deployment
// takes often, each more than once where a statement's plan could change
// after its fifth run.
func hotPaths(t *testing.T, b *testBundle) {
	ctx := b.ctx
	parkedKey := func(id uuid.UUID, key string) string {
		return step(b.waitState(t, id, "parked"), key).CorrelationKey
	}
	for i := range 3 {
		submit := func(source string) uuid.UUID { return b.submit(t, source, map[string]any{"round": i}) }
		chain := submit(`(t.echo :round $round :v 1 :as @a) (t.count :after @a :as @b) (t.echo :v @a.v :after @b)`)
		b.waitStatus(t, chain, rbtype.RunbookComplete)
		_, err := b.engine.Get(ctx, chain)
		require.NoError(t, err)
		_, err = b.engine.Events(ctx, chain, 0, 100)
		require.NoError(t, err)

		// A park, its heartbeat, and its resume in place.
		w := submit(`(t.wait :round $round :as @w) (t.echo :v @w.answer)`)
		key := parkedKey(w, "w")
		_, err = b.engine.Heartbeat(ctx, key, "PT2H")
		require.NoError(t, err)
		_, err = b.engine.Notify(ctx, runtime.Notification{CorrelationKey: key, Status: "completed", Result: []byte(`{"answer":"yes"}`)})
		require.NoError(t, err)
		b.waitStatus(t, w, rbtype.RunbookComplete)

		// A tenant's park resumed by its tenant's notification, under a
		// budget the tenant set: the wait looked up within the tenant,
		// and the budgets read with the tenant's spend.
		acme := runtime.WithScope(ctx, runtime.Scope{Tenant: "acme"})
		sub, err := b.engine.SubmitSource(acme, "acme.rbk", []byte(`(t.wait :round $round :as @w) (t.echo :v @w.answer)`),
			runtime.Submission{Inputs: map[string]any{"round": i}, Actor: "test"})
		require.NoError(t, err)
		key = parkedKey(sub.ID, "w")
		_, err = b.engine.Notify(acme, runtime.Notification{CorrelationKey: key, Status: "completed", Result: []byte(`{"answer":"yes"}`)})
		require.NoError(t, err)
		b.waitStatus(t, sub.ID, rbtype.RunbookComplete)

		// A park resumed through the inbox: notified where no worker runs.
		w = submit(`(t.wait :round $round :via "inbox" :as @w) (t.echo :v @w.answer)`)
		key = parkedKey(w, "w")
		api := runtime.New(b.store, b.handlers, runtime.Config{Catalogue: b.cat})
		_, err = api.Notify(ctx, runtime.Notification{CorrelationKey: key, Status: "completed", Result: []byte(`{"answer":"yes"}`)})
		require.NoError(t, err)
		b.waitStatus(t, w, rbtype.RunbookComplete)

		// A gate approved; a gate rejected, whose runbook compensates.
		g := submit(`(t.approve :round $round :what "x" :as @g) (t.echo :v 1 :after @g)`)
		b.waitState(t, g, "awaiting_approval")
		require.NoError(t, b.engine.Decide(ctx, g, "g", true, "ops", ""))
		b.waitStatus(t, g, rbtype.RunbookComplete)
		r := submit(`(t.echo :round $round :as @r0) (t.reserve :what "car" :after @r0 :as @car) (t.approve :what "x" :after @car :as @g)`)
		b.waitState(t, r, "awaiting_approval")
		require.NoError(t, b.engine.Decide(ctx, r, "g", false, "ops", ""))
		b.waitFor(t, r, "compensated", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookFailed && v.FinishedAt != nil })

		// A failure retried; a park cancelled; a runbook extended, then
		// regenerated once finished.
		f := submit(`(t.fail :round $round :x 1)`)
		b.waitStatus(t, f, rbtype.RunbookFailed)
		_, err = b.engine.Retry(ctx, f, machine.RetryOptions{By: "ops"})
		require.NoError(t, err)
		b.waitFor(t, f, "failed again", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookFailed })
		c := submit(`(t.wait :round $round :then "cancel" :as @w)`)
		parkedKey(c, "w")
		require.NoError(t, b.engine.Cancel(ctx, c, "ops"))
		x := submit(`(t.wait :round $round :then "extend" :as @w)`)
		key = parkedKey(x, "w")
		_, err = b.engine.Extend(ctx, x, runtime.Extension{Filename: "more.rbk", Source: []byte(`(t.echo :v 2)`)})
		require.NoError(t, err)
		_, err = b.engine.Notify(ctx, runtime.Notification{CorrelationKey: key, Status: "completed", Result: []byte(`{"answer":"yes"}`)})
		require.NoError(t, err)
		b.waitStatus(t, x, rbtype.RunbookComplete)
		_, err = b.engine.Regenerate(ctx, x, runtime.Regeneration{Actor: "ops"})
		require.NoError(t, err)

		// A timeout escalated and resolved; a timer; retries with backoff.
		e := submit(`(t.wait-escalate :round $round :as @w) (t.echo :v 1 :after @w)`)
		b.waitStatus(t, e, rbtype.RunbookEscalated)
		require.NoError(t, b.engine.Resolve(ctx, e, "w", machine.Resolution{Action: machine.ResolveComplete, By: "ops"}))
		b.waitStatus(t, e, rbtype.RunbookComplete)
		s := submit(`(t.sleep :round $round :as @s) (t.echo :v 1 :after @s)`)
		b.waitStatus(t, s, rbtype.RunbookComplete)
		fl := submit(`(t.flaky :round $round :x 1)`)
		b.waitStatus(t, fl, rbtype.RunbookFailed)

		// Leases: renewed while calls run, listed at shutdown.
		_, err = b.store.RenewLeases(ctx, b.engine.WorkerID(), time.Now().Add(time.Minute), []int64{1, 2})
		require.NoError(t, err)
		_, err = b.store.WorkerLeases(ctx, b.engine.WorkerID())
		require.NoError(t, err)

		// The reads an advance makes when its caches miss: a finished
		// step's data, receipts, cache entries and plans.
		tx, err := b.store.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.StepDataByKey(ctx, []driver.StepKey{{RunbookID: chain, Key: "a"}, {RunbookID: w, Key: "w"}})
		require.NoError(t, err)
		_, err = tx.Receipts(ctx, []driver.ReceiptKey{{Handler: "test.count", IdempotencyKey: "k"}})
		require.NoError(t, err)
		_, err = tx.CacheEntries(ctx, "default", []string{"k"})
		require.NoError(t, err)
		_, err = tx.Plans(ctx, []uuid.UUID{chain, w})
		require.NoError(t, err)
		require.NoError(t, tx.Rollback(ctx))

		// The retention sweep's work: finished runbooks past their time.
		_, err = b.store.Prune(ctx, driver.PruneOptions{FinishedBefore: time.Now().Add(-24 * time.Hour),
			ReceiptsBefore: time.Now().Add(-48 * time.Hour), LedgerBefore: time.Now().Add(-72 * time.Hour), Limit: 10})
		require.NoError(t, err)
	}
}

// explainable says whether a statement is one PostgreSQL can explain:
// queries and writes, not locks, savepoints or notifications.
func explainable(sql string) bool {
	s := strings.ToUpper(strings.TrimSpace(sql))
	for _, skip := range []string{"SELECT PG_", "SAVEPOINT", "ROLLBACK", "RELEASE", "LISTEN", "BEGIN", "COMMIT", "SET ", "SHOW ", "COPY "} {
		if strings.HasPrefix(s, skip) {
			return false
		}
	}
	return strings.HasPrefix(s, "SELECT") || strings.HasPrefix(s, "WITH") || strings.HasPrefix(s, "INSERT") ||
		strings.HasPrefix(s, "UPDATE") || strings.HasPrefix(s, "DELETE")
}

// oneLine squeezes a statement's whitespace for a failure message.
func oneLine(sql string) string { return strings.Join(strings.Fields(sql), " ") }
