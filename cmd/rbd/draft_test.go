package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// draftVerbs: an internal step whose compensation calls the outside world,
// a step that fails, and a wait that escalates by paging the outside
// world, at url.
func draftVerbs(url string) string {
	return fmt.Sprintf(`
- name: reserve
  domain: t
  execution:
    kind: sync
    handler: core.echo
    side_effects: internal_db
    compensation: {verb: t.release, args: {what: "@args.what"}}
  input_schema:
    properties:
      what: {type: string}
- name: release
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%[1]s/release"}
  input_schema:
    properties:
      what: {type: string}
- name: boom
  domain: t
  execution: {kind: sync, handler: core.fail, side_effects: none, params: {code: POLICY_DENIED, message: no}}
- name: page
  domain: t
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%[1]s/page"}
  input_schema:
    properties:
      who: {type: string}
- name: await
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: internal_db
    timeouts:
      park_timeout: PT0.5S
      on_timeout: escalate
      escalation: {verb: t.page, args: {who: oncall}}
`, url)
}

// Under attack (docs/reliability.md), row 6: a draft_only runbook calls nothing outside, its
// compensations and escalations included: a compensation or an escalation
// whose verb has external_call side effects is skipped with DRAFT_ONLY, and
// the view says what would move the runbook.
func TestDraftOnlySkipsOutsideCompensationsAndEscalations(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var called []string
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		called = append(called, r.URL.Path)
		mu.Unlock()
		fmt.Fprint(w, `{"ok": true}`)
	}))
	t.Cleanup(outside.Close)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", draftVerbs(outside.URL))
	d := e.start(t, "--verbs", verbs)
	rbd := d.client("")
	ctx := context.Background()
	final := func(id string, status rbtype.RunbookStatus) *httpViewDraft {
		var v httpViewDraft
		waitUntil(t, "the draft to finish "+string(status), func() (bool, error) {
			got, out := send(t, "GET", d.server+"/v1/runbooks/"+id, "")
			if got != http.StatusOK {
				return false, fmt.Errorf("%d %s", got, out)
			}
			v = httpViewDraft{}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				return false, err
			}
			return v.Status == status && v.FinishedAt != nil, nil
		})
		return &v
	}

	sub, err := rbd.Submit(ctx, apitype.SubmitRequest{Source: "(t.reserve :what \"room\" :as @r)\n(t.boom :after @r)", Mode: rbtype.ModeDraftOnly})
	require.NoError(t, err)
	v := final(sub.ID.String(), rbtype.RunbookFailed)
	r := v.step("r")
	require.NotNil(t, r.Compensation, "the compensation is recorded")
	require.Equal(t, "skipped", r.Compensation.Status)
	require.Contains(t, r.Compensation.Error, "DRAFT_ONLY")
	require.NotEmpty(t, v.NextActions)

	sub, err = rbd.Submit(ctx, apitype.SubmitRequest{Source: "(t.await :as @w)", Mode: rbtype.ModeDraftOnly})
	require.NoError(t, err)
	v = final(sub.ID.String(), rbtype.RunbookEscalated)
	w := v.step("w")
	require.NotNil(t, w.Escalation, "the escalation is recorded")
	require.Equal(t, "skipped", w.Escalation.Status)
	require.Contains(t, w.Escalation.Error, "DRAFT_ONLY")
	require.Contains(t, v.commands(), "rbd retry "+sub.ID.String()+" --execute --step w")

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, called, "a draft called the outside world")
}

// httpViewDraft is what the draft test reads of a view.
type httpViewDraft struct {
	Status      rbtype.RunbookStatus `json:"status"`
	FinishedAt  *string              `json:"finished_at"`
	Steps       []draftStep          `json:"steps"`
	NextActions []struct {
		Kind    string `json:"kind"`
		Command string `json:"command"`
	} `json:"next_actions"`
}

// draftStep is a step of httpViewDraft: its undoing and its escalation.
type draftStep struct {
	Key          string     `json:"key"`
	Compensation *sideState `json:"compensation"`
	Escalation   *sideState `json:"escalation"`
}

type sideState struct {
	Status string `json:"status"`
	Error  string `json:"error"`
}

func (v *httpViewDraft) step(key string) draftStep {
	for _, s := range v.Steps {
		if s.Key == key {
			return s
		}
	}
	panic("no step " + key)
}

func (v *httpViewDraft) commands() []string {
	var out []string
	for _, a := range v.NextActions {
		out = append(out, a.Command)
	}
	return out
}
