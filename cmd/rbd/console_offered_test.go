package main

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// offeredVerbs are a revocation that the runbook gates for the security
// group (risk medium) and a high-risk promotion.
const offeredVerbs = `
- name: revoke
  domain: iam
  risk: medium
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
  input_schema:
    required: [user]
    properties: {user: {type: string}}
- name: promote
  domain: db
  risk: high
  execution: {kind: sync, handler: http.call, params: {url: "https://db-admin.internal/v1/promote"}, side_effects: external_call, level: guarded}
  input_schema:
    required: [cluster]
    properties: {cluster: {type: string}}
`

const offeredRunbook = `(iam.revoke :user "ann" :gate "human_confirm" :approvers "security" :as @revoke)
(db.promote :cluster "eu-1" :as @promote)
`

// TestConsoleOffersOnlyWhatTheTokenMayDo: the console's buttons follow
// the view, which is computed for the signed-in token (docs/daemon.md, "The gate"):
// a gate of a group the token is not of, or above its max_risk, has no
// Approve or Reject and no place in the bulk bar, but says whom to ask,
// on the runbook's page and the step's; a gate the token may decide has
// them, and its approval is accepted. The inbox offers no actions, only
// what each runbook waits on, whoever may do it.
func TestConsoleOffersOnlyWhatTheTokenMayDo(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/ops.yaml", offeredVerbs)
	tokens := e.file(t, "tokens", "admin-token\n"+
		"lead-token actor=lead roles=read,submit,approve\n"+
		"sec-token actor=sam roles=read,approve groups=security max_risk=medium\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)
	id := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: offeredRunbook, Filename: "access.rbk"})
	waitView(t, d, "admin-token", id, "at both gates", func(v *apitype.RunbookView) bool {
		return v.State == rbtype.StateAwaitingApproval && len(v.BlockedOn) == 2
	})

	// The lead, of no group: the promotion is theirs, the revocation not.
	b := newBrowser(t, 390, 844)
	signIn(t, b, d, "lead-token")
	waitJS(t, b, `document.querySelectorAll("#waiting tbody tr").length === 1`)
	inbox := eval[string](t, b, `document.querySelector("#waiting tbody tr").textContent`)
	require.Contains(t, inbox, "approval of revoke", "the inbox says what the runbook waits on, whoever decides it")
	require.Contains(t, inbox, "approval of promote")
	require.Zero(t, eval[int](t, b, `document.querySelectorAll("#waiting button").length`), "the inbox offers no actions")
	b.do(t, "open the runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#gates .gate-card[data-step="promote"] button[data-action="approve"]`)))
	require.False(t, eval[bool](t, b, `!!document.querySelector('#gates .gate-card[data-step="revoke"] button')`),
		"no Approve or Reject on a gate of another group")
	require.Contains(t, eval[string](t, b, `document.querySelector('#gates [data-not-yours="revoke"]').textContent`),
		`Not yours to decide: step "revoke" is decided only by a token of group "security"`)
	require.False(t, eval[bool](t, b, `!!document.getElementById("bulk")`), "one gate is the lead's: no bulk bar")
	require.Contains(t, eval[string](t, b, `document.querySelector('#next li.not-yours[data-step="revoke"]').textContent`), `group "security"`)
	require.True(t, eval[bool](t, b, `!!document.querySelector('#next li[data-kind="approve"][data-step="promote"]:not(.not-yours)')`))
	require.True(t, eval[bool](t, b, `!!document.querySelector('button[data-action="cancel"]')`), "the lead, who may submit, may cancel")
	require.LessOrEqual(t, eval[int](t, b, `document.documentElement.scrollWidth`), 390, "the page scrolls sideways at 390px")
	b.do(t, "open the revocation", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id+"/steps/revoke"),
		chromedp.WaitVisible(chromedp.CSS(`#step [data-not-yours="revoke"]`)))
	require.False(t, eval[bool](t, b, `!!document.querySelector('#step button[data-action="approve"]')`))
	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())

	// Sam, of the group but max_risk=medium: the revocation is his, the
	// promotion not; his approval is accepted and recorded as his.
	b2 := newBrowser(t, 1280, 900)
	signIn(t, b2, d, "sec-token")
	b2.do(t, "open the runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#gates .gate-card[data-step="revoke"] button[data-action="approve"]`)))
	require.Contains(t, eval[string](t, b2, `document.querySelector('#gates [data-not-yours="promote"]').textContent`),
		"its gate is decided only by a token with max_risk=high (or admin), and this one's is medium")
	require.False(t, eval[bool](t, b2, `!!document.querySelector('#gates .gate-card[data-step="promote"] button')`))
	require.False(t, eval[bool](t, b2, `!!document.querySelector('button[data-action="cancel"]')`), "no Cancel for a token without submit")
	b2.do(t, "approve the revocation", chromedp.Click(chromedp.CSS(`#gates .gate-card[data-step="revoke"] button[data-action="approve"]`)))
	v := waitView(t, d, "admin-token", id, "revoke done", func(v *apitype.RunbookView) bool {
		for _, s := range v.Steps {
			if s.Key == "revoke" {
				return s.Status == rbtype.StepComplete
			}
		}
		return false
	})
	require.Equal(t, "sam", v.Steps[0].GateDecision.By)
	require.Empty(t, b2.problems(), "the page's console:\n%s", b2.console())
}
