package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// docs/design/semantics.md section 1: receipts are per tenant. The same global-scope
// call (whose key names no runbook) in two tenants is two effects at the
// provider, under two keys; in one tenant, twice, it is one. And a
// tenant's engine calls do not see another's runbook.
func TestTenantsNeverShareAReceipt(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	keys := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		fmt.Fprint(w, `{"charged": true}`)
	}))
	t.Cleanup(srv.Close)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: charge
  domain: t
  execution:
    kind: sync
    handler: http.call
    params: {url: %q, method: POST}
    side_effects: external_call
    idempotency: {scope: global, key_fields: [order]}
  input_schema:
    properties:
      order: {type: string}
`, srv.URL))
	b.run(t)
	acme := runtime.WithScope(b.ctx, runtime.Scope{Tenant: "acme"})
	globex := runtime.WithScope(b.ctx, runtime.Scope{Tenant: "globex"})
	var ids []string
	for i, ctx := range []context.Context{acme, acme, globex} {
		sub, err := b.engine.SubmitSource(ctx, "charge.rbk",
			[]byte(fmt.Sprintf("(t.charge :order \"o-1\" :as @c%d)", i)), runtime.Submission{Actor: "test"})
		require.NoError(t, err)
		ids = append(ids, sub.ID.String())
		b.waitStatus(t, sub.ID, rbtype.RunbookComplete)
	}
	mu.Lock()
	require.Len(t, keys, 2, "acme's two charges share a key (one effect, then its receipt); globex's is its own")
	mu.Unlock()

	_, err := b.engine.Get(globex, mustID(ids[0]))
	require.ErrorIs(t, err, rbtype.ErrNotFound, "another tenant's runbook is not there")
	_, err = b.engine.Get(acme, mustID(ids[0]))
	require.NoError(t, err)
	_, err = b.engine.Get(runtime.WithScope(b.ctx, runtime.Scope{All: true}), mustID(ids[2]))
	require.NoError(t, err, "an admin sees every tenant")
}

// Under attack (docs/reliability.md), row 1: the default tenant's request keys take its prefix
// (migration tenant_request_keys), so that a runbook submitted before
// still answers its repeat, and acme's key "tenant:acme:K" is acme's
// alone. A row under a key of the caller's namespace that belongs to
// another tenant (written by hand) is never handed to the caller.
func TestRequestKeysAreNamespacedAndMigrated(t *testing.T) {
	b := setup(t)
	v := pgtest.MigrationVersion(t, "tenant_request_keys")
	b.store = pgtest.StoreAt(t, v-1)
	b.newEngine()
	source := "(t.echo :msg \"hi\")"
	plan, diags := compiler.CompileSource("k.rbk", []byte(source), b.cat)
	require.False(t, diags.HasErrors(), "%v", diags)
	insert := `INSERT INTO runbooks (id, plan, plan_hash, inputs, request_key, tenant) VALUES ($1, $2, $3, '{}', $4, $5)`
	old, acmes := uuid.New(), uuid.New()
	pgtest.ExecIn(t, b.store, insert, old, plan.JSON(), plan.PlanHash, "K", "default")
	pgtest.ExecIn(t, b.store, insert, acmes, plan.JSON(), plan.PlanHash, "tenant:acme:K", "acme")
	_, err := b.store.Migrate(b.ctx)
	require.NoError(t, err)

	def := runtime.WithScope(b.ctx, runtime.Scope{Tenant: runtime.DefaultTenant})
	again, err := b.engine.SubmitSource(def, "k.rbk", []byte(source), runtime.Submission{IdempotencyKey: "K"})
	require.NoError(t, err)
	require.False(t, again.Created, "the default tenant's runbook, stored before the prefix, answers its repeat")
	require.Equal(t, old, again.ID)
	acme := runtime.WithScope(b.ctx, runtime.Scope{Tenant: "acme"})
	theirs, err := b.engine.SubmitSource(acme, "k.rbk", []byte(source), runtime.Submission{IdempotencyKey: "K"})
	require.NoError(t, err)
	require.False(t, theirs.Created)
	require.Equal(t, acmes, theirs.ID)
	squat, err := b.engine.SubmitSource(def, "k.rbk", []byte(source), runtime.Submission{IdempotencyKey: "tenant:acme:K"})
	require.NoError(t, err)
	require.True(t, squat.Created, "the default tenant's key spelling acme's is its own")

	// A key of the default namespace held by another tenant's row.
	pgtest.ExecIn(t, b.store, insert, uuid.New(), plan.JSON(), plan.PlanHash, "tenant:default:planted", "globex")
	_, err = b.engine.SubmitSource(def, "k.rbk", []byte(source), runtime.Submission{IdempotencyKey: "planted"})
	require.ErrorIs(t, err, rbtype.ErrConflict)
	require.NotContains(t, err.Error(), "globex")
}

// Under attack (docs/reliability.md), row 8: a notification signed with another tenant's secret
// that arrives before the step parks (its key known, somehow) is kept in
// that tenant's namespace: it never takes the key, the step's own
// tenant's notification is accepted, not refused as a conflict, and it
// is what resumes the step.
func TestAForeignEarlyNotificationNeverTakesTheKey(t *testing.T) {
	b := setup(t)
	b.run(t)
	acme := runtime.WithScope(b.ctx, runtime.Scope{Tenant: "acme"})
	globex := runtime.WithScope(b.ctx, runtime.Scope{Tenant: "globex"})
	sub, err := b.engine.SubmitSource(acme, "w.rbk", []byte("(t.approve :as @g)\n(t.wait :after @g :as @w)"), runtime.Submission{})
	require.NoError(t, err)
	b.waitState(t, sub.ID, "awaiting_approval")
	key, err := runtime.CorrelationKeyForTest(b.ctx, b.engine, sub.ID, "w", 1)
	require.NoError(t, err)

	res, err := b.engine.Notify(globex, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: []byte(`{"answer":"forged"}`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res)
	require.NoError(t, b.engine.Decide(acme, sub.ID, "g", true, "ops", ""))
	v := b.waitState(t, sub.ID, "parked")
	require.Equal(t, key, v.BlockedOn[0].CorrelationKey, "the key the test derived is the step's")

	res, err = b.engine.Notify(acme, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: []byte(`{"answer":"real"}`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res, "acme's own notification")
	v = b.waitStatus(t, sub.ID, rbtype.RunbookComplete)
	require.JSONEq(t, `{"answer":"real"}`, string(v.Outcomes["w"]))
	// globex's repeat is a duplicate in its own namespace, nothing more.
	res, err = b.engine.Notify(globex, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: []byte(`{"answer":"forged"}`)})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxDuplicate, res)
}
