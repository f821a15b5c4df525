package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// docs/design/semantics.md section 3: a service behind http.call reports what a call
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
	require.ErrorIs(t, err, rbtype.ErrInvalid)
	other, err := b.engine.Costs(runtime.WithScope(b.ctx, runtime.Scope{Tenant: "acme"}), "verb", "", nil, nil)
	require.NoError(t, err)
	require.Empty(t, other, "another tenant's costs are not there")
}

// TestANotificationReportsWhatTheWaitUsed: a notification's usage is added
// to the ledger row of the attempt whose wait it ends, a repeat that
// reports other usage is a conflict, a notification without usage hashes
// as it always did, and usage no work could have made is refused with
// nothing stored.
func TestANotificationReportsWhatTheWaitUsed(t *testing.T) {
	b := setup(t)
	b.run(t)
	id := b.submit(t, `(t.wait :as @w)`, nil)
	key := step(b.waitState(t, id, "parked"), "w").CorrelationKey
	notify := func(usage driver.Usage) (rbtype.InboxResult, error) {
		return b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: key, Status: rbtype.OutcomeCompleted,
			Result: json.RawMessage(`{"answer": "yes"}`), Usage: usage})
	}
	for _, bad := range []driver.Usage{{TokensIn: -1}, {CostUSD: -0.5}, {Model: "m\x00"}, {Model: strings.Repeat("m", 201)}} {
		_, err := notify(bad)
		require.ErrorIs(t, err, rbtype.ErrInvalid, "%+v", bad)
	}
	used := driver.Usage{TokensIn: 900, TokensOut: 100, Model: "reviewer-1", CostUSD: 0.25, Credits: 1}
	res, err := notify(used)
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxAccepted, res, "nothing was stored by the refusals")
	v := b.waitStatus(t, id, rbtype.RunbookComplete)
	require.Equal(t, int64(1), v.Cost.Attempts)
	require.Equal(t, int64(900), v.Cost.TokensIn)
	require.Equal(t, int64(100), v.Cost.TokensOut)
	require.InDelta(t, 0.25, v.Cost.CostUSD, 1e-9)
	require.InDelta(t, 1, v.Cost.Credits, 1e-9)

	res, err = notify(used)
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxDuplicate, res)
	res, err = notify(driver.Usage{TokensIn: 1})
	require.NoError(t, err)
	require.Equal(t, rbtype.InboxConflict, res, "another report of what it used is another notification")

	byVerb, err := b.engine.Costs(b.ctx, "verb", "", nil, nil)
	require.NoError(t, err)
	require.Len(t, byVerb, 1)
	require.Equal(t, "t.wait", byVerb[0].Group)
	require.InDelta(t, 0.25, byVerb[0].CostUSD, 1e-9)
}
