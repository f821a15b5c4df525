package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

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
	require.ErrorIs(t, err, runtime.ErrNotFound, "another tenant's runbook is not there")
	_, err = b.engine.Get(acme, mustID(ids[0]))
	require.NoError(t, err)
	_, err = b.engine.Get(runtime.WithScope(b.ctx, runtime.Scope{All: true}), mustID(ids[2]))
	require.NoError(t, err, "an admin sees every tenant")
}
