package runtime_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// SEMANTICS.md section 3: a service behind http.call reports what a call
// used in Rbd-Usage; the job ledger keeps it with the attempt, the view
// sums it, and the costs report groups it. A cache hit is an attempt of
// its own, counted as a hit, at no cost; a malformed header reports
// nothing and fails nothing.
func TestTheJobLedgerSumsWhatAttemptsUsed(t *testing.T) {
	b := setup(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/model":
			w.Header().Set("Rbd-Usage", `{"tokens_in": 1200, "tokens_out": 300, "model": "m-1", "cost_usd": 0.012, "credits": 2}`)
		case "/broken":
			w.Header().Set("Rbd-Usage", `{"tokens_in": "many"}`)
		}
		fmt.Fprint(w, `{"text": "ok"}`)
	}))
	t.Cleanup(srv.Close)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: ask
  domain: t
  execution:
    kind: sync
    handler: http.call
    params: {url: "%[1]s/model", method: POST}
    side_effects: none
    determinism: stable
    cache: {policy: reuse}
  input_schema: {properties: {q: {type: string}}}
- name: broken
  domain: t
  execution: {kind: sync, handler: http.call, params: {url: "%[1]s/broken", method: POST}, side_effects: none}
`, srv.URL))
	b.run(t)
	first := b.submit(t, `(t.ask :q "a" :as @a) (t.ask :q "b" :as @b) (t.broken :as @c)`, nil)
	v := b.waitStatus(t, first, rbtype.RunbookComplete)
	require.Equal(t, int64(3), v.Cost.Attempts)
	require.Equal(t, int64(2400), v.Cost.TokensIn)
	require.Equal(t, int64(600), v.Cost.TokensOut)
	require.InDelta(t, 0.024, v.Cost.CostUSD, 1e-9)
	require.InDelta(t, 4, v.Cost.Credits, 1e-9)
	require.Zero(t, v.Cost.CacheHits)

	// The same question again: a cache hit, at no cost.
	second := b.submit(t, `(t.ask :q "a" :as @again)`, nil)
	v = b.waitStatus(t, second, rbtype.RunbookComplete)
	require.Equal(t, int64(1), v.Cost.Attempts)
	require.Equal(t, int64(1), v.Cost.CacheHits)
	require.Zero(t, v.Cost.CostUSD)

	byVerb, err := b.engine.Costs(b.ctx, "verb", "", nil, nil)
	require.NoError(t, err)
	require.Len(t, byVerb, 2)
	require.Equal(t, "t.ask", byVerb[0].Group)
	require.Equal(t, int64(3), byVerb[0].Attempts)
	require.Equal(t, int64(1), byVerb[0].CacheHits)
	require.InDelta(t, 0.024, byVerb[0].CostUSD, 1e-9)
	require.Equal(t, "t.broken", byVerb[1].Group)
	require.Zero(t, byVerb[1].TokensIn, "a malformed header reports nothing")

	_, err = b.engine.Costs(b.ctx, "weekday", "", nil, nil)
	require.ErrorIs(t, err, runtime.ErrInvalid)
	other, err := b.engine.Costs(runtime.WithScope(b.ctx, runtime.Scope{Tenant: "acme"}), "verb", "", nil, nil)
	require.NoError(t, err)
	require.Empty(t, other, "another tenant's costs are not there")
}
