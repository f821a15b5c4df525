package runtime_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
)

// docs/design/semantics.md section 7: a draft_only runbook drafts and sends nothing.
// The send is skipped with DRAFT_ONLY, what follows it too, and the view's
// next_actions names it; run for real, the send goes out with the draft
// that was read, which is not drafted again.
func TestDraftOnlyDraftsThenRunsForReal(t *testing.T) {
	b := setup(t)
	svc := &effects{byKey: map[string]int{}}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	d := &drafter{}
	require.NoError(t, b.handlers.Register(registry.HandlerSpec{Name: "test.draft", Kind: rbtype.KindSync}, handler.HandlerFunc(d.draft)))
	b.extendCatalogue(t, fmt.Sprintf(`
- name: draft
  domain: t
  execution: {kind: sync, handler: test.draft, side_effects: none, determinism: stable}
  output_schema: {properties: {text: {type: string}}}
- name: send
  domain: t
  execution: {kind: sync, handler: http.call, params: {url: %q, method: POST}, side_effects: external_call}
`, srv.URL))
	b.run(t)
	sub, err := b.engine.SubmitSource(b.ctx, "outreach.rbk",
		[]byte(`(t.draft :to "ada" :as @d) (t.send :body @d.text :as @send) (t.echo :after @send :as @after)`),
		runtime.Submission{Mode: rbtype.ModeDraftOnly, Actor: "agent"})
	require.NoError(t, err)
	v := b.waitStatus(t, sub.ID, rbtype.RunbookPartial)
	require.Equal(t, rbtype.ModeDraftOnly, v.Mode)
	require.Equal(t, rbtype.CodeDraftOnly, v.Reason.Code, "never complete: its send has yet to run")
	require.Equal(t, rbtype.StepComplete, step(v, "d").Status)
	require.Equal(t, rbtype.StepSkipped, step(v, "send").Status)
	require.Equal(t, rbtype.CodeDraftOnly, step(v, "send").Error.Code)
	require.Equal(t, rbtype.StepSkipped, step(v, "after").Status)
	require.Zero(t, svc.requests, "nothing was sent")
	require.Empty(t, v.Failures, "a draft's skips are not failures")
	// after only runs after the draft's send (:after), so it is skipped as
	// after any step that did not complete, not a draft itself
	// (docs/design/semantics.md section 15); running send for real runs it.
	require.Equal(t, []apitype.ActionView{
		apitype.NewAction(apitype.ActionRetry, "send", apitype.ActionArgs{RunbookID: sub.ID, Execute: true}),
	}, v.NextActions)
	require.Equal(t, "rbd retry "+sub.ID.String()+" --execute --step send", v.NextActions[0].Command)
	require.Equal(t, "run step send, which the draft held back, for real, with what depends on it", v.NextActions[0].Does)
	draft := v.Outcomes["d"]

	// A retry that is not --execute cannot make a draft send; --execute on
	// a runbook that is not a draft is refused.
	_, err = b.engine.Retry(b.ctx, sub.ID, machine.RetryOptions{By: "ops"})
	require.ErrorIs(t, err, rbtype.ErrConflict)
	plain := b.submit(t, `(t.echo :v 1)`, nil)
	b.waitStatus(t, plain, rbtype.RunbookComplete)
	_, err = b.engine.Retry(b.ctx, plain, machine.RetryOptions{By: "ops", Execute: true})
	require.ErrorIs(t, err, rbtype.ErrConflict)

	// Run for real: the send goes out once, with the draft that was read.
	res, err := b.engine.Retry(b.ctx, sub.ID, machine.RetryOptions{By: "ops", Execute: true})
	require.NoError(t, err)
	require.Equal(t, []string{"send", "after"}, res.Steps)
	v = b.waitStatus(t, sub.ID, rbtype.RunbookComplete)
	require.Equal(t, rbtype.ModeExecute, v.Mode)
	require.Equal(t, rbtype.StepComplete, step(v, "send").Status)
	require.Equal(t, rbtype.StepComplete, step(v, "after").Status)
	require.Equal(t, 1, svc.requests)
	require.Len(t, d.of(sub.ID), 1, "the draft was not made again")
	require.JSONEq(t, string(draft), string(v.Outcomes["d"]))
	require.Empty(t, v.NextActions)
	require.Contains(t, b.eventTypes(t, sub.ID), "RUNBOOK_RETRIED")
}

// The acceptance test: the funding-outreach example itself, submitted
// draft_only against a model gateway: the summaries and the draft are
// made, the review (a person's work) and the send are skipped with
// DRAFT_ONLY and named in next_actions, nothing reaches the mail service,
// and the CRM write, which waits for the review, is skipped after it.
func TestDraftOnlyOnTheFundingOutreachExample(t *testing.T) {
	b := setup(t)
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/v1/summarize":
			fmt.Fprint(w, `{"text":"A ledger for small shops.","company":"Tallyco"}`)
		case "/v1/align":
			fmt.Fprint(w, `{"score":0.8,"rationale":"Fits the fintech thesis."}`)
		case "/v1/draft":
			fmt.Fprint(w, `{"draft_id":"d-1","body":"Dear Ada, ..."}`)
		default:
			http.Error(w, "not in this test", http.StatusTeapot)
		}
	}))
	t.Cleanup(srv.Close)
	dir := "../examples/runbooks/funding-outreach"
	files, err := filepath.Glob(dir + "/verbs/*.yaml")
	require.NoError(t, err)
	hosts := regexp.MustCompile(`http://[a-z]+\.internal:[0-9]+`)
	b.useCatalogue(t, files, func(src string) string { return hosts.ReplaceAllString(src, srv.URL) })
	b.run(t)
	source, err := os.ReadFile(dir + "/funding-outreach.rbk")
	require.NoError(t, err)
	sub, err := b.engine.SubmitSource(b.ctx, "funding-outreach.rbk", source, runtime.Submission{Mode: rbtype.ModeDraftOnly, Actor: "agent",
		Inputs: map[string]any{"deck_url": "https://decks.example/tallyco.pdf", "fund_thesis": "fintech for small business",
			"founder_name": "Ada", "founder_email": "ada@tallyco.example"}})
	require.NoError(t, err)
	v := b.waitStatus(t, sub.ID, rbtype.RunbookPartial)

	for _, key := range []string{"summary", "fit", "draft"} {
		require.Equal(t, rbtype.StepComplete, step(v, key).Status, key)
	}
	require.JSONEq(t, `{"draft_id":"d-1","body":"Dear Ada, ..."}`, string(v.Outcomes["draft"]))
	for _, key := range []string{"review", "outreach.send-email#6"} {
		require.Equal(t, rbtype.StepSkipped, step(v, key).Status, key)
		require.Equal(t, rbtype.CodeDraftOnly, step(v, key).Error.Code, key)
	}
	require.Equal(t, rbtype.StepSkipped, step(v, "crm").Status)
	require.Nil(t, step(v, "crm").Error, "the CRM write is not a draft's skip: it waited for the review")
	var named []string
	for _, a := range v.NextActions {
		named = append(named, a.Step)
		require.Equal(t, apitype.ActionRetry, a.Kind)
	}
	require.Equal(t, []string{"review", "outreach.send-email#6"}, named)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{"/v1/summarize": 1, "/v1/align": 1, "/v1/draft": 1}, hits, "nothing reached the review tool or the mail service")
}
