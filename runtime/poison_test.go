package runtime_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// A provider answers with a value PostgreSQL cannot store: a number out of
// jsonb's range, which passes every check before the write (a NUL is
// caught before it). Recording that result fails every time.
// The step fails, once, with a message that says why; the provider is not
// called again; and a runbook advanced beside it is not held up.
func TestAnUnstorableResultFailsItsStepOnce(t *testing.T) {
	b := setup(t)
	var poisoned, fine atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/poison" {
			poisoned.Add(1)
			fmt.Fprint(w, `{"v":1e999999}`)
			return
		}
		fine.Add(1)
		fmt.Fprint(w, `{"v":"ok"}`)
	}))
	t.Cleanup(srv.Close)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: poison
  domain: t
  execution: {kind: sync, handler: http.call, params: {url: "%[1]s/poison", method: POST}, side_effects: external_call}
- name: fine
  domain: t
  execution: {kind: sync, handler: http.call, params: {url: "%[1]s/fine", method: POST}, side_effects: external_call}
`, srv.URL))
	b.run(t)
	bad := b.submit(t, `(t.poison :n 1 :as @p) (t.echo :after @p :as @next)`, nil)
	good := b.submit(t, `(t.fine :n 2 :as @f)`, nil)

	v := b.waitStatus(t, bad, rbtype.RunbookFailed)
	p := step(v, "p")
	require.Equal(t, rbtype.StepFailed, p.Status)
	require.Equal(t, rbtype.CodeInternal, p.Error.Code)
	require.Contains(t, p.Error.Message, "its result could not be recorded: it holds a value the database cannot store")
	require.NotContains(t, p.Error.Message, "22P05", "the database's own words stay in the log")
	require.Equal(t, rbtype.StepSkipped, step(v, "next").Status)
	b.waitStatus(t, good, rbtype.RunbookComplete)

	// The failure is final: a while later the provider has still seen one
	// call, whatever the lease TTL.
	_, err := b.engine.Retry(b.ctx, bad, machine.RetryOptions{By: "test"}) // a person may try again, knowingly
	require.NoError(t, err)
	b.waitStatus(t, bad, rbtype.RunbookFailed)
	require.Equal(t, int32(2), poisoned.Load(), "one call per attempt: the first, and the retry a person asked for")
	require.Equal(t, int32(1), fine.Load())
	require.Equal(t, 2, step(mustView(t, b, bad), "p").Attempt)
}

func mustView(t *testing.T, b *testBundle, id any) *apitype.RunbookView {
	t.Helper()
	v, err := b.engine.Get(b.ctx, mustID(id))
	require.NoError(t, err)
	return v
}
