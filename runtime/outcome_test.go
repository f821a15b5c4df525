package runtime_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// fundingOutreach runs the funding-outreach example against test services
// for the model gateway, the review tool and the mail service, with its
// CRM table in a schema of the test's own.
func fundingOutreach(t *testing.T) (*testBundle, *int) {
	t.Helper()
	b := setup(t)
	drafts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/summarize":
			fmt.Fprint(w, `{"text":"A ledger for small shops.","company":"Tallyco"}`)
		case "/v1/align":
			fmt.Fprint(w, `{"score":0.8,"rationale":"Fits the fintech thesis."}`)
		case "/v1/draft":
			drafts++
			w.Header().Set(builtin.UsageHeader, `{"model":"drafter-2","tokens_out":120,"parameters":{"temperature":0.4}}`)
			fmt.Fprintf(w, `{"draft_id":"d-%d","body":"Dear Ada, draft %d"}`, drafts, drafts)
		case "/v1/tasks":
			fmt.Fprint(w, `{"id":"task-1"}`)
		case "/v1/send":
			fmt.Fprint(w, `{"message_id":"m-1"}`)
		default:
			http.Error(w, "not in this test", http.StatusTeapot)
		}
	}))
	t.Cleanup(srv.Close)
	app := dealsSchema(t)
	b.handlers = runtime.NewHandlers(builtin.Deps{CRUD: pgtest.CRUD(t, app), DaemonSchema: b.store.Schema()})
	dir := "../examples/runbooks/funding-outreach"
	files, err := filepath.Glob(dir + "/verbs/*.yaml")
	require.NoError(t, err)
	hosts := regexp.MustCompile(`http://[a-z]+\.internal:[0-9]+`)
	b.useCatalogue(t, files, func(src string) string {
		return strings.ReplaceAll(hosts.ReplaceAllString(src, srv.URL), "table: crm.deals", "table: "+app+".deals")
	})
	b.run(t)
	return b, &drafts
}

// driveOutreach takes a funding-outreach runbook through its review (the
// reviewer's edit) and its two gates, to the end.
func driveOutreach(t *testing.T, b *testBundle, id uuid.UUID) *apitype.RunbookView {
	t.Helper()
	for {
		v := b.waitFor(t, id, "waiting on someone", func(v *apitype.RunbookView) bool {
			return !v.Status.Running() || v.State == "parked" || v.State == "awaiting_approval"
		})
		if !v.Status.Running() {
			return v
		}
		for _, blocked := range v.BlockedOn {
			switch blocked.Reason {
			case apitype.BlockedAwaitingNotification:
				_, err := b.engine.Notify(b.ctx, runtime.Notification{CorrelationKey: blocked.CorrelationKey, Status: rbtype.OutcomeCompleted,
					Result: json.RawMessage(`{"subject":"Tallyco and us","body":"Dear Ada, edited"}`)})
				require.NoError(t, err)
			case apitype.BlockedRequiresApproval:
				require.NoError(t, b.engine.Decide(b.ctx, id, blocked.Step, true, "partner", "ok"))
			}
		}
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The acceptance test: the funding-outreach flow records a Draft.Email
// draft and, after approval, a final Sent.Email that names the draft it
// consumed; the draft's provenance names the research, the model and its
// parameters, and the hashes of its arguments and result; a regeneration
// makes version 2 of the draft, linked to version 1.
func TestFundingOutreachRecordsOutcomesWithProvenance(t *testing.T) {
	b, drafts := fundingOutreach(t)
	source, err := os.ReadFile("../examples/runbooks/funding-outreach/funding-outreach.rbk")
	require.NoError(t, err)
	inputs := map[string]any{"deck_url": "https://decks.example/tallyco.pdf", "fund_thesis": "fintech for small business",
		"founder_name": "Ada", "founder_email": "ada@tallyco.example"}
	sub, err := b.engine.SubmitSource(b.ctx, "funding-outreach.rbk", source, runtime.Submission{Actor: "agent", Inputs: inputs})
	require.NoError(t, err)
	v := driveOutreach(t, b, sub.ID)
	require.Equal(t, rbtype.RunbookComplete, v.Status)

	byType := map[string]apitype.ProducedView{}
	for _, p := range v.Produced {
		byType[p.Type] = p
	}
	require.Len(t, v.Produced, 4, "summary, fit, draft and send")
	draft, sent := byType["Draft.Email"], byType["Sent.Email"]
	require.Equal(t, apitype.ProducedView{OutcomeID: draft.OutcomeID, Type: "Draft.Email", Status: rbtype.OutcomeDraft,
		Preview: "Dear Ada, draft 1", Step: "draft", Version: 1}, draft)
	require.Equal(t, rbtype.OutcomeFinal, sent.Status)
	require.Equal(t, "m-1", sent.Preview)

	// The send names the draft it was made from (through the review,
	// which declares no outcome), and its chain goes on to the research.
	s, err := b.engine.Outcome(b.ctx, sent.OutcomeID)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{draft.OutcomeID}, s.Consumed)
	require.Equal(t, draft.OutcomeID, s.Provenance[0].ID)
	var chain []string
	for _, o := range s.Provenance {
		chain = append(chain, o.Type)
	}
	require.Equal(t, []string{"Draft.Email", "Research.Summary", "Research.Fit"}, chain)

	d, err := b.engine.Outcome(b.ctx, draft.OutcomeID)
	require.NoError(t, err)
	require.Equal(t, "drafter-2", d.Model)
	require.JSONEq(t, `{"temperature":0.4}`, string(d.Parameters))
	require.Equal(t, sha(`{"body":"Dear Ada, draft 1","draft_id":"d-1"}`), d.ResultHash, "SHA-256 of the canonical JSON")
	require.NotEmpty(t, d.Arguments)
	canon, err := json.Marshal(decodeData[map[string]any](t, d.Arguments))
	require.NoError(t, err)
	require.Equal(t, sha(string(canon)), d.ArgsHash, "the arguments are those the hash names")
	require.Equal(t, "Ada", decodeData[map[string]any](t, d.Arguments)["founder-name"])
	require.Contains(t, b.eventTypes(t, sub.ID), "OUTCOME_RECORDED draft")

	// Another tenant never sees it.
	_, err = b.engine.Outcome(runtime.WithScope(b.ctx, runtime.Scope{Tenant: "other"}), draft.OutcomeID)
	require.ErrorIs(t, err, rbtype.ErrNotFound)

	// Regenerate: the draft is made again, as version 2 of the same
	// outcome, linked to version 1; the send inherits its key and returns
	// the receipt of the email that went out.
	regen, err := b.engine.Regenerate(b.ctx, sub.ID, runtime.Regeneration{Actor: "agent"})
	require.NoError(t, err)
	v2 := driveOutreach(t, b, regen.ID)
	require.Equal(t, rbtype.RunbookComplete, v2.Status)
	require.Equal(t, 2, *drafts, "drafted again")
	var draft2 apitype.ProducedView
	for _, p := range v2.Produced {
		if p.Type == "Draft.Email" {
			draft2 = p
		}
	}
	require.Equal(t, 2, draft2.Version)
	require.NotEqual(t, draft.OutcomeID, draft2.OutcomeID)
	require.Equal(t, "Dear Ada, draft 2", draft2.Preview)
	d2, err := b.engine.Outcome(b.ctx, draft2.OutcomeID)
	require.NoError(t, err)
	require.Equal(t, draft.OutcomeID, *d2.Previous)
	require.Len(t, d2.Versions, 1)
	require.Equal(t, draft.OutcomeID, d2.Versions[0].ID)
	require.Equal(t, 1, d2.Versions[0].Version)
}

// A draft_only runbook never ends complete: it ends partial with reason
// DRAFT_ONLY, and its drafts are outcomes.
func TestDraftOnlyEndsPartial(t *testing.T) {
	b, _ := fundingOutreach(t)
	source, err := os.ReadFile("../examples/runbooks/funding-outreach/funding-outreach.rbk")
	require.NoError(t, err)
	sub, err := b.engine.SubmitSource(b.ctx, "funding-outreach.rbk", source, runtime.Submission{Mode: rbtype.ModeDraftOnly, Actor: "agent",
		Inputs: map[string]any{"deck_url": "https://decks.example/tallyco.pdf", "fund_thesis": "fintech",
			"founder_name": "Ada", "founder_email": "ada@tallyco.example"}})
	require.NoError(t, err)
	v := b.waitFor(t, sub.ID, "finished", func(v *apitype.RunbookView) bool { return !v.Status.Running() })
	require.Equal(t, rbtype.RunbookPartial, v.Status)
	require.Nil(t, v.Error, "a reason, not a failure")
	require.Equal(t, rbtype.CodeDraftOnly, v.Reason.Code)
	require.Empty(t, v.Failures)
	var types []string
	for _, p := range v.Produced {
		types = append(types, p.Type+" "+string(p.Status))
	}
	require.ElementsMatch(t, []string{"Research.Summary final", "Research.Fit final", "Draft.Email draft"}, types)
	events, err := b.engine.Events(context.Background(), sub.ID, 0, 0)
	require.NoError(t, err)
	last := events[len(events)-1]
	require.Equal(t, rbtype.EventRunbookPartial, last.Type)
	require.JSONEq(t, `{"reason":"DRAFT_ONLY","skipped_steps":["review","outreach.send-email#6"]}`, string(last.Data))
}
