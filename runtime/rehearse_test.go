package runtime_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// bank is a payment provider with a validation endpoint: /validate says
// whether a transfer would go through, /transfer makes it.
type bank struct {
	mu        sync.Mutex
	validated int
	committed []float64
	dryRunHdr []string
}

func (b *bank) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct{ Amount float64 }
	_ = json.NewDecoder(r.Body).Decode(&body)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch r.URL.Path {
	case "/validate":
		b.validated++
		b.dryRunHdr = append(b.dryRunHdr, r.Header.Get("Rbd-Dry-Run"))
		status := "ready"
		if body.Amount > 100 {
			status = "over_limit"
		}
		fmt.Fprintf(w, `{"status":%q}`, status)
	case "/transfer":
		b.committed = append(b.committed, body.Amount)
		fmt.Fprint(w, `{"status":"sent"}`)
	default:
		http.NotFound(w, r)
	}
}

// docs/design/semantics.md section 7: a full step dry-runs, is verified, then commits.
// A dry run that breaks :expect fails the step with VERIFY_FAILED, never
// retried, and the provider saw no commit; one that matches commits once,
// and the ledger shows the rehearsal before the success.
func TestAFullStepIsRehearsedBeforeItCommits(t *testing.T) {
	b := setup(t)
	provider := &bank{}
	srv := httptest.NewServer(provider)
	t.Cleanup(srv.Close)
	b.extendCatalogue(t, fmt.Sprintf(`
- name: transfer
  domain: t
  risk: high
  execution:
    kind: sync
    handler: http.call
    params: {url: "%[1]s/transfer", dry_run: url, dry_run_url: "%[1]s/validate"}
    side_effects: external_call
    level: full
    retry: {max_attempts: 3, base_delay: PT0.01S, max_delay: PT0.01S}
  input_schema:
    properties:
      amount: {type: number}
  output_schema:
    properties:
      status: {type: string}
`, srv.URL))
	b.run(t)

	approve := func(id any) {
		b.waitState(t, mustID(id), "awaiting_approval") // risk high: the compiler froze a gate
		require.NoError(t, b.engine.Decide(b.ctx, mustID(id), "t.transfer#1", true, "ops", ""))
	}
	tooBig := b.submit(t, `(t.transfer :amount 500 :expect {:status "ready"})`, nil)
	approve(tooBig)
	v := b.waitStatus(t, tooBig, rbtype.RunbookFailed)
	s := step(v, "t.transfer#1")
	require.Equal(t, rbtype.CodeVerifyFailed, s.Error.Code)
	require.Contains(t, s.Error.Message, `expected status = "ready", got "over_limit"`)
	require.Equal(t, 1, s.Attempt, "a verify failure is not retried")
	types := b.eventTypes(t, tooBig)
	require.Subset(t, types, []string{"STEP_DRY_RUN t.transfer#1", "STEP_VERIFY_FAILED t.transfer#1", "STEP_FAILED t.transfer#1"})
	require.NotContains(t, types, "STEP_VERIFIED t.transfer#1")

	fine := b.submit(t, `(t.transfer :amount 50 :expect {:status "ready"})`, nil)
	approve(fine)
	v = b.waitStatus(t, fine, rbtype.RunbookComplete)
	require.JSONEq(t, `{"status":"sent"}`, string(v.Outcomes["t.transfer#1"]))
	types = b.eventTypes(t, fine)
	dry, verified, succeeded := indexOf(types, "STEP_DRY_RUN t.transfer#1"), indexOf(types, "STEP_VERIFIED t.transfer#1"), indexOf(types, "STEP_SUCCEEDED t.transfer#1")
	require.True(t, dry >= 0 && dry < verified && verified < succeeded, "dry run, verified, then the commit's success: %v", types)

	provider.mu.Lock()
	defer provider.mu.Unlock()
	require.Equal(t, []float64{50}, provider.committed, "only the verified transfer was committed, once")
	require.Equal(t, 2, provider.validated)
	require.Equal(t, []string{"true", "true"}, provider.dryRunHdr, "a dry run says it is one")

	events, err := b.engine.Events(b.ctx, fine, 0, 0)
	require.NoError(t, err)
	for _, e := range events {
		if e.Type == rbtype.EventStepDryRun {
			var d machine.StepDryRunData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			require.Equal(t, rbtype.LevelFull, d.Level)
			require.Regexp(t, `^[0-9a-f]{64}$`, d.ArgsHash)
			require.Regexp(t, `^[0-9a-f]{64}$`, d.ResultHash)
		}
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
