package main

import (
	"context"
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

// formsProxy answers the example runbooks' services as their HTTP proxy:
// three stale grants, a replica nine seconds behind, and OK to the rest.
func formsProxy(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Host + r.URL.Path {
		case "iam.internal/v1/grants/stale":
			fmt.Fprint(w, `{"count": 3, "stale": [{"user": "ada", "role": "admin"}, {"user": "bo", "role": "oncall"}, {"user": "cy", "role": "deploy"}]}`)
		case "iam.internal/v1/grants/revoke":
			fmt.Fprint(w, `{"revoked": "yes"}`)
		case "db-api.internal:8070/v1/replication/lag":
			fmt.Fprint(w, `{"seconds": 9}`)
		default:
			fmt.Fprint(w, `{"ok": true}`)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestConsoleForms shows the examples' for-each and conditions in the
// console: a template is one node with its iterations' count, which opens
// into the iterations and closes again; a condition's edges are marked,
// and a step a false condition skipped is drawn apart from one a failure
// skipped; a failure hook stands apart below the rest.
func TestConsoleForms(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 800)
	if dir := os.Getenv("RBD_TEST_SHOTS"); dir != "" {
		b.shots = dir // keep the screenshots to look at
	}
	e := newDaemonEnv(t)
	e.env = append(e.env, "HTTP_PROXY="+formsProxy(t).URL)
	examples := "../../examples/runbooks"
	verbs := e.file(t, "verbs/all.yaml", "")
	var all []string
	for _, f := range []string{"access-review/verbs/iam.yaml", "access-review/verbs/tickets.yaml", "db-failover/verbs/db.yaml", "db-failover/verbs/chat.yaml"} {
		src, err := os.ReadFile(filepath.Join(examples, f))
		require.NoError(t, err)
		all = append(all, string(src))
	}
	require.NoError(t, os.WriteFile(verbs, []byte(strings.Join(all, "\n")), 0o600))
	d := e.start(t, "--verbs", verbs)
	cl := d.client("")
	ctx := context.Background()
	submit := func(example string, inputs map[string]any) string {
		src, err := os.ReadFile(filepath.Join(examples, example, example+".rbk"))
		require.NoError(t, err)
		sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: string(src), Filename: example + ".rbk", Inputs: inputs})
		require.NoError(t, err)
		return sub.ID.String()
	}

	review := submit("access-review", map[string]any{"system": "billing"})
	waitUntil(t, "the revocations to wait for approval", func() (bool, error) {
		v, err := cl.Get(ctx, review)
		return err == nil && v.State == rbtype.StateAwaitingApproval && len(v.BlockedOn) == 3, err
	})
	nodes := func() []string {
		return eval[[]string](t, b, `[...document.querySelectorAll("#graph .node")].map(n => n.getAttribute("data-key"))`)
	}
	b.do(t, "open the access review",
		chromedp.Navigate(d.server+"/ui/#/runbooks/"+review),
		chromedp.WaitVisible(chromedp.CSS(`.node.template[data-key="revoked"]`)))
	require.ElementsMatch(t, []string{"grants", "revoked", "tickets.file#3"}, nodes(), "the iterations are folded into their template")
	require.Equal(t, "×3: 0 done, 3 under way", eval[string](t, b, `document.querySelector('.node[data-key="revoked"] .count').textContent`))
	require.Equal(t, "revoked[*]: pending", eval[string](t, b, `document.querySelector('.node[data-key="revoked"]').getAttribute("aria-label")`))
	b.shot(t, "template-closed")

	b.do(t, "open the template", chromedp.Click(chromedp.CSS(`[data-toggle="revoked"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.node[data-key="revoked[2]"]`)))
	require.ElementsMatch(t, []string{"grants", "revoked", "tickets.file#3", "revoked[0]", "revoked[1]", "revoked[2]"}, nodes())
	require.Equal(t, 3, eval[int](t, b, `document.querySelectorAll("#graph .edge.collect").length`), "each iteration feeds the template")
	require.Equal(t, "waiting_approval", eval[string](t, b, `document.querySelector('.node[data-key="revoked[1]"]').getAttribute("data-status")`))
	require.Equal(t, "true", eval[string](t, b, `document.querySelector('[data-toggle="revoked"]').getAttribute("aria-expanded")`))
	b.shot(t, "template-open")

	// An approval shows up live: the count and the iteration's node.
	_, err := cl.Approve(ctx, review, "revoked[0]", apitype.DecisionRequest{By: "lead"})
	require.NoError(t, err)
	b.do(t, "see the approved iteration complete",
		chromedp.WaitReady(chromedp.CSS(`.node[data-key="revoked[0]"][data-status="complete"]`)))
	waitUntil(t, "the count to follow", func() (bool, error) {
		return eval[string](t, b, `document.querySelector('.node[data-key="revoked"] .count').textContent`) == "×3: 1 done, 2 under way", nil
	})
	b.do(t, "close the template", chromedp.Click(chromedp.CSS(`[data-toggle="revoked"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`.node[data-key="revoked[0]"]`)))

	// The failover with its replica too far behind: the pause is skipped
	// by its condition, the steps reading it after it.
	failover := submit("db-failover", map[string]any{"cluster": "main", "replica": "r3"})
	waitUntil(t, "the failover to complete", func() (bool, error) {
		v, err := cl.Get(ctx, failover)
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	b.do(t, "open the failover",
		chromedp.Navigate(d.server+"/ui/#/runbooks/"+failover),
		chromedp.WaitVisible(chromedp.CSS(`.node[data-key="pause"]`)))
	require.Equal(t, "node st-skipped conditional quiet", eval[string](t, b, `document.querySelector('.node[data-key="pause"]').getAttribute("class")`))
	require.Equal(t, "node st-skipped quiet", eval[string](t, b, `document.querySelector('.node[data-key="promote"]').getAttribute("class")`))
	require.Contains(t, eval[string](t, b, `document.querySelector('.node[data-key="pause"] title').textContent`), "runs when (< @lag.seconds 5)")
	require.Equal(t, 2, eval[int](t, b, `document.querySelectorAll('#graph .edge.when[data-from="lag"]').length`), "pause and the second post read @lag in their conditions")
	require.Contains(t, eval[string](t, b, `document.querySelector('.node.hook[data-key="alarm"]').getAttribute("class")`), "st-skipped")
	hookY := eval[float64](t, b, `document.querySelector('.node[data-key="alarm"] rect').getAttribute("y") * 1`)
	lagY := eval[float64](t, b, `document.querySelector('.node[data-key="chat.post#5"] rect').getAttribute("y") * 1`)
	require.Greater(t, hookY, lagY, "the hooks stand below the rest")
	b.shot(t, "conditions")
	require.Empty(t, b.problems())
}
