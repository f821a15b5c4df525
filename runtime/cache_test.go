package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// model is a counting test server behind http.call: a model gateway whose
// answer follows from the request, and which counts its calls by body.
type model struct {
	mu    sync.Mutex
	calls map[string]int
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	m.mu.Lock()
	m.calls[fmt.Sprint(body["to"])]++
	n := m.calls[fmt.Sprint(body["to"])]
	m.mu.Unlock()
	fmt.Fprintf(w, `{"text":"Dear %v (draft %d)"}`, body["to"], n)
}

func (m *model) count(to string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[to]
}

// clock is a time the test moves.
// clock is the engine's clock in a test: real time moved by advance, or,
// once frozen, a fixed instant moved only by advance, so that a check of
// what is not yet due cannot be outrun by a loaded machine's real time.
type clock struct{ offset, frozen atomic.Int64 }

func (c *clock) now() time.Time {
	base := time.Now()
	if f := c.frozen.Load(); f != 0 {
		base = time.Unix(0, f)
	}
	return base.Add(time.Duration(c.offset.Load()))
}
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }
func (c *clock) freeze()                 { c.frozen.Store(time.Now().Truncate(time.Microsecond).UnixNano()) } // what the database keeps

// submitKeyed submits source under an idempotency key of its own, so that
// equal sources start separate runbooks.
func submitKeyed(t *testing.T, b *testBundle, key, source string) uuid.UUID {
	t.Helper()
	sub, err := b.engine.SubmitSource(b.ctx, "cache.rbk", []byte(source), runtime.Submission{IdempotencyKey: key, Actor: "test"})
	require.NoError(t, err)
	return sub.ID
}

// succeeded is the data of a step's STEP_SUCCEEDED.
func succeeded(t *testing.T, b *testBundle, id uuid.UUID, step string) machine.StepSucceededData {
	t.Helper()
	events, err := b.engine.Events(b.ctx, id, 0, 0)
	require.NoError(t, err)
	for _, e := range events {
		if e.Type == rbtype.EventStepSucceeded && e.StepKey == step {
			var d machine.StepSucceededData
			if len(e.Data) > 0 {
				require.NoError(t, json.Unmarshal(e.Data, &d))
			}
			return d
		}
	}
	t.Fatalf("step %s never succeeded", step)
	return machine.StepSucceededData{}
}

// docs/design/semantics.md section 4: a cached stable verb runs once for two runbooks
// with equal arguments and again for other arguments; a hit calls no
// handler and writes no receipt; a ttl entry expires by the engine's
// clock, which the test moves (no sleeping through a ttl).
func TestTheResultCache(t *testing.T) {
	c := &clock{}
	b := setup(t, func(cfg *runtime.Config) { cfg.Clock = c.now })
	srv := httptest.NewServer(&model{calls: map[string]int{}})
	t.Cleanup(srv.Close)
	gateway := srv.Config.Handler.(*model)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: draft
  domain: t
  execution:
    kind: sync
    handler: http.call
    params: {url: %q, method: POST}
    side_effects: internal_db
    determinism: stable
    cache: {policy: ttl, ttl: PT6H}
  input_schema:
    properties:
      to: {type: string}
`, srv.URL))
	b.run(t)

	first := submitKeyed(t, b, "one", `(t.draft :to "ada" :as @d)`)
	v1 := b.waitStatus(t, first, rbtype.RunbookComplete)
	require.Equal(t, 1, gateway.count("ada"))
	require.Empty(t, succeeded(t, b, first, "d").Cache, "a miss runs the handler")

	// Equal arguments in another runbook: a hit, from the first.
	second := submitKeyed(t, b, "two", `(t.draft :to "ada" :as @d)`)
	v2 := b.waitStatus(t, second, rbtype.RunbookComplete)
	require.Equal(t, 1, gateway.count("ada"), "the hit called no handler")
	require.JSONEq(t, string(v1.Outcomes["d"]), string(v2.Outcomes["d"]))
	hit := succeeded(t, b, second, "d")
	require.Equal(t, "hit", hit.Cache)
	require.Equal(t, first, hit.Source.RunbookID)
	require.Equal(t, "d", hit.Source.Step)
	require.Equal(t, 1, hit.Source.Attempt)
	require.NotNil(t, hit.Source.ExpiresAt)
	require.WithinDuration(t, hit.Source.CreatedAt.Add(6*time.Hour), *hit.Source.ExpiresAt, time.Second)
	require.Zero(t, step(v2, "d").Attempt, "no attempt was made")
	// The miss wrote its receipt (internal_db); the hit wrote none.
	require.Len(t, receiptsOf(t, b, first, "d"), 1)
	require.Empty(t, receiptsOf(t, b, second, "d"))

	// Other arguments: another key, another call.
	other := submitKeyed(t, b, "three", `(t.draft :to "grace" :as @d)`)
	b.waitStatus(t, other, rbtype.RunbookComplete)
	require.Equal(t, 1, gateway.count("grace"))

	// Six hours later the entry has expired: the handler runs again, and
	// its result replaces the entry.
	c.advance(6*time.Hour + time.Second)
	later := submitKeyed(t, b, "four", `(t.draft :to "ada" :as @d)`)
	v4 := b.waitStatus(t, later, rbtype.RunbookComplete)
	require.Equal(t, 2, gateway.count("ada"))
	require.Empty(t, succeeded(t, b, later, "d").Cache)
	require.Contains(t, string(v4.Outcomes["d"]), "draft 2")
	again := submitKeyed(t, b, "five", `(t.draft :to "ada" :as @d)`)
	b.waitStatus(t, again, rbtype.RunbookComplete)
	require.Equal(t, later, succeeded(t, b, again, "d").Source.RunbookID, "the fresh entry is used")

}

// A regeneration bypasses the cache for a step that regenerates: it drafts
// again rather than reusing the draft it is meant to replace.
func TestRegenerationBypassesTheCache(t *testing.T) {
	b := setup(t)
	srv := httptest.NewServer(&model{calls: map[string]int{}})
	t.Cleanup(srv.Close)
	gateway := srv.Config.Handler.(*model)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: draft
  domain: t
  execution:
    kind: sync
    handler: http.call
    params: {url: %q, method: POST}
    side_effects: none
    determinism: stable
    cache: {policy: reuse}
  input_schema:
    properties:
      to: {type: string}
`, srv.URL))
	b.run(t)
	root := b.submit(t, `(t.draft :to "ada" :as @d)`, nil)
	b.waitStatus(t, root, rbtype.RunbookComplete)
	sub, err := b.engine.Regenerate(b.ctx, root, runtime.Regeneration{Actor: "test"})
	require.NoError(t, err)
	v := b.waitStatus(t, sub.ID, rbtype.RunbookComplete)
	require.Equal(t, 2, gateway.count("ada"))
	require.Contains(t, string(v.Outcomes["d"]), "draft 2")
	// Its result replaced the entry: a new runbook reuses the new draft.
	fresh := submitKeyed(t, b, "fresh", `(t.draft :to "ada" :as @d)`)
	b.waitStatus(t, fresh, rbtype.RunbookComplete)
	require.Equal(t, sub.ID, succeeded(t, b, fresh, "d").Source.RunbookID)
	require.Equal(t, 2, gateway.count("ada"))
}

// receiptsOf finds the receipts stored under a step's idempotency key.
func receiptsOf(t *testing.T, b *testBundle, id uuid.UUID, stepKey string) []driver.Receipt {
	t.Helper()
	steps, err := b.store.Steps(b.ctx, id, driver.StepPage{Limit: 1000})
	require.NoError(t, err)
	var out []driver.Receipt
	for _, s := range steps {
		if s.Key != stepKey || s.IdempotencyKey == "" {
			continue
		}
		require.NoError(t, b.store.InTx(b.ctx, func(tx driver.Tx) error {
			found, err := tx.Receipts(b.ctx, []driver.ReceiptKey{{Handler: "http.call", IdempotencyKey: s.IdempotencyKey}})
			for _, r := range found {
				out = append(out, r)
			}
			return err
		}))
	}
	return out
}
