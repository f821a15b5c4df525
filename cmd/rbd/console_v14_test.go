package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// TestConsoleV14 shows the runtime forms of v1.4 in the console
// (docs/design/language.md v1.4), on the quarterly access review: a
// gate's condition and its approvers group where the person decides,
// and, in the ledger, the reminder a wait sent and the default it took.
func TestConsoleV14(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 900)
	e := newDaemonEnv(t)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Host + r.URL.Path {
		case "idp.internal/v1/members":
			fmt.Fprint(w, `{"users": [{"id": "ann", "kind": "person", "manager": "mia", "env": "production"}, {"id": "bo", "kind": "person", "manager": "max", "env": "dev"}]}`)
		case "iam.internal/v1/revoke":
			fmt.Fprint(w, `{"user": "x", "revoked_at": "2026-11-28T10:00:00Z"}`)
		case "grc.internal/v1/access-reviews":
			fmt.Fprint(w, `{"report": "AR-1"}`)
		default:
			fmt.Fprint(w, `{}`)
		}
	}))
	t.Cleanup(proxy.Close)
	e.env = append(e.env, "HTTP_PROXY="+proxy.URL)
	example := "../../examples/runbooks/quarterly-access-review"
	// The example's verbs, its reminder and timeout shortened to seconds.
	for _, f := range []string{"iam.yaml", "idp.yaml", "report.yaml", "review.yaml"} {
		src, err := os.ReadFile(filepath.Join(example, "verbs", f))
		require.NoError(t, err)
		text := strings.NewReplacer("park_timeout: P14D", "park_timeout: PT10S", "remind_after: P7D", "remind_after: PT1S").Replace(string(src))
		e.file(t, "verbs/"+f, text)
	}
	d := e.start(t, "--verbs", filepath.Join(e.dir, "verbs"))
	cl := d.client("")
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join(example, "quarterly-access-review.rbk"))
	require.NoError(t, err)
	sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: string(src), Filename: "quarterly-access-review.rbk",
		Inputs: map[string]any{"group": "payments", "quarter": "2026-Q4"}})
	require.NoError(t, err)
	id := sub.ID.String()
	var key string
	waitUntil(t, "both reviews to wait", func() (bool, error) {
		v, err := cl.Get(ctx, id)
		if err != nil || len(v.BlockedOn) != 2 {
			return false, err
		}
		key = v.BlockedOn[0].CorrelationKey
		return v.BlockedOn[0].Step == "review[0]" && key != "", nil
	})
	// ann's manager says revoke; bo's never answers: reminded, then the
	// default (revoke) at the timeout.
	_, err = cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: json.RawMessage(`{"decision":"revoke"}`)})
	require.NoError(t, err)
	waitUntil(t, "bo's review to take its default, ann's revocation to wait", func() (bool, error) {
		v, err := cl.Get(ctx, id)
		if err != nil {
			return false, err
		}
		done := false
		for _, s := range v.Steps {
			if s.Key == "revoked[1]" && s.Status == rbtype.StepComplete {
				done = true
			}
		}
		return done && v.State == rbtype.StateAwaitingApproval, nil
	})

	b.do(t, "open the review",
		chromedp.Navigate(d.server+"/ui/#/runbooks/"+id),
		chromedp.WaitVisible(chromedp.CSS(`.gate-card[data-step="revoked[0]"]`)))
	fact := func(scope, name string) string {
		return eval[string](t, b, `(document.querySelector('`+scope+` [data-fact="`+name+`"]') || {textContent: ""}).textContent`)
	}
	require.Equal(t, `(= @user.env "production") held when the step became ready`, fact(`.gate-card[data-step="revoked[0]"]`, "gate when"))
	require.Equal(t, "tokens of group security (or an admin) decide", fact(`.gate-card[data-step="revoked[0]"]`, "approvers"))
	page := func() string { return eval[string](t, b, `document.body.innerText`) }
	waitUntil(t, "the ledger to show the reminder and the default", func() (bool, error) {
		p := page()
		return strings.Contains(p, "reminder sent (review.remind) after PT1S") && strings.Contains(p, "took its default") &&
			strings.Contains(p, "the default (:timeout-result), not an answer"), nil
	})
	require.Contains(t, page(), `group security decides`, "GATE_REQUESTED names the group")
	b.shot(t, "v14-gate")

	b.do(t, "open the gated step",
		chromedp.Navigate(d.server+"/ui/#/runbooks/"+id+"/steps/"+"revoked%5B0%5D"),
		chromedp.WaitVisible(chromedp.CSS(`#step [data-fact="gate when"]`)))
	require.Contains(t, fact("#step", "gate when"), `(= @user.env "production")`)
	require.Equal(t, "tokens of group security (or an admin)", fact("#step", "approvers"))
	b.shot(t, "v14-step")
	require.Empty(t, b.problems())
}
