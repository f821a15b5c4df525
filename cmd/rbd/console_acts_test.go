package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// actVerbs are the verbs of the console's actions: a list whose items a
// for-each revokes, each behind its own gate; a wait that escalates when
// its park times out; a wait that does not; a call that fails retryably.
const actVerbs = `
- name: stale
  domain: iam
  execution: {kind: sync, handler: core.echo, params: {result: {users: ["ada", "bo", "cy"]}}, side_effects: none}
- name: revoke
  domain: iam
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
  input_schema:
    properties: {user: {type: string}}
- name: page
  domain: ops
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1S, on_timeout: escalate}
- name: wait-ack
  domain: ops
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: P1D}
- name: call-chat
  domain: ops
  execution: {kind: sync, handler: core.fail, params: {code: DEPENDENCY_UNAVAILABLE, message: "chat.internal did not answer"}, side_effects: none}
`

const reviewSource = `(iam.stale :as @grants)
(for-each @grants.users :as @u
  (iam.revoke :user @u :gate "human_confirm" :as @revoked))
`

// TestConsoleActs: from the console, at a phone's width and a desktop's,
// a person approves every gate of a for-each at once (each decision
// recorded on its own, under the name given), retries a failed step,
// resolves an escalated one with a result, and cancels a parked runbook
// after a confirmation; the inbox, with an admin's tenant column, fits the
// screen; the header says who the ledger records, for a token that names
// no actor.
func TestConsoleActs(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/acts.yaml", actVerbs)
	tokens := e.file(t, "tokens", "admin-token\nacme-token tenant=acme actor=acme-bot roles=read,submit,approve\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--sweep-interval", "200ms")
	ctx := context.Background()
	admin := d.client("admin-token")

	for _, size := range []struct {
		w, h int
		name string
	}{{390, 844, "phone"}, {1280, 800, "desktop"}} {
		t.Run(size.name, func(t *testing.T) {
			person := "lead-" + size.name
			review := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: reviewSource, Filename: "access-review.rbk", IdempotencyKey: "review-" + size.name})
			failing := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: `(ops.call-chat :as @post)`, Filename: "post-update.rbk", IdempotencyKey: "post-" + size.name})
			escalating := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: "(ops.page :as @page)", Filename: "page-oncall.rbk", IdempotencyKey: "page-" + size.name})
			parked := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: "(ops.wait-ack :as @ack)", Filename: "wait-ack.rbk", IdempotencyKey: "ack-" + size.name})
			submitAs(t, d, "acme-token", apitype.SubmitRequest{Source: "(ops.wait-ack :as @ack)", Filename: "quarterly_access_review_of_the_billing_system.rbk", IdempotencyKey: "acme-" + size.name})
			waitView(t, d, "admin-token", review, "at three gates", func(v *apitype.RunbookView) bool { return len(v.BlockedOn) == 3 })
			waitView(t, d, "admin-token", failing, "failed", func(v *apitype.RunbookView) bool { return v.FinishedAt != nil })
			waitView(t, d, "admin-token", escalating, "escalated", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookEscalated })
			waitView(t, d, "admin-token", parked, "parked", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateParked })

			b := newBrowser(t, size.w, size.h)
			signIn(t, b, d, "admin-token")
			// The inbox, with the tenant column an admin gets, fits.
			waitJS(t, b, `document.querySelectorAll("#waiting tbody tr").length >= 3`)
			require.LessOrEqual(t, eval[int](t, b, `document.documentElement.scrollWidth`), size.w, "the inbox scrolls sideways at %dpx", size.w)
			require.True(t, eval[bool](t, b, `[...document.querySelectorAll("table.runbooks")].every(t => t.scrollWidth <= t.clientWidth + 1)`),
				"a table of the inbox runs past its box at %dpx", size.w)
			inbox := b.shot(t, "inbox-"+size.name)
			// A token that names no actor: the header does not call its
			// token-N a person, and says a name is asked.
			who := eval[string](t, b, `document.getElementById("who").textContent`)
			require.Equal(t, "Signed in with token-1 (default), which names no one: you give a name when you decide", who)

			// Every gate of the for-each, at once.
			b.do(t, "open the review", chromedp.Navigate(d.server+"/ui/#/runbooks/"+review),
				chromedp.WaitVisible(chromedp.CSS(`#bulk button[data-action="approve-selected"]`)))
			require.Equal(t, 3, eval[int](t, b, `document.querySelectorAll("#gates input[data-select]").length`))
			b.do(t, "select all and approve",
				chromedp.Click(chromedp.CSS(`#bulk button[data-action="select-all"]`)),
				chromedp.SendKeys(chromedp.CSS(`#bulk input[data-by="bulk"]`), person),
				chromedp.SendKeys(chromedp.CSS(`#bulk input[data-bulk-comment]`), "unused for a quarter"))
			require.Equal(t, "3 selected", eval[string](t, b, `document.querySelector("[data-selected-count]").textContent`))
			bulkShot := b.shot(t, "gates-bulk-"+size.name)
			b.do(t, "approve the selected", chromedp.Click(chromedp.CSS(`#bulk button[data-action="approve-selected"]`)))
			waitView(t, d, "admin-token", review, "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
			waitJS(t, b, `!!document.querySelector(".toolbar .badge.s-complete")`)
			approved := map[string]string{}
			evs, err := admin.Events(ctx, review, 0)
			require.NoError(t, err)
			for _, ev := range evs {
				if ev.Type == rbtype.EventGateApproved {
					var data struct{ By, Comment string }
					require.NoError(t, json.Unmarshal(ev.Data, &data))
					require.Equal(t, "unused for a quarter", data.Comment)
					approved[ev.Step] = data.By
				}
			}
			require.Equal(t, map[string]string{"revoked[0]": person, "revoked[1]": person, "revoked[2]": person}, approved,
				"each gate approved on its own, by the name given")
			require.Equal(t, "Deciding as "+person+", with token-1 (default)", eval[string](t, b, `document.getElementById("who").textContent`))

			// Retry a failed step.
			b.do(t, "open the failed runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+failing),
				chromedp.WaitVisible(chromedp.CSS(`button[data-action="retry"][data-step="post"]`)),
				chromedp.Click(chromedp.CSS(`button[data-action="retry"][data-step="post"]`)))
			waitEvent(t, admin, failing, rbtype.EventType("RUNBOOK_RETRIED"), person)

			// Resolve an escalated step with a result.
			b.do(t, "open the escalated runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+escalating),
				chromedp.WaitVisible(chromedp.CSS(`button[data-action="resolve-complete"][data-step="page"]`)))
			require.True(t, eval[bool](t, b, `!!document.querySelector('button[data-action="resolve-retry"][data-step="page"]')`))
			require.True(t, eval[bool](t, b, `!!document.querySelector('button[data-action="resolve-fail"][data-step="page"]')`))
			b.do(t, "complete it with a result",
				chromedp.SendKeys(chromedp.CSS(`input[data-result="page"]`), `{"acked_by": "oncall"}`))
			resolveShot := b.shot(t, "resolve-"+size.name)
			b.do(t, "resolve", chromedp.Click(chromedp.CSS(`button[data-action="resolve-complete"][data-step="page"]`)))
			v := waitView(t, d, "admin-token", escalating, "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
			require.JSONEq(t, `{"acked_by": "oncall"}`, string(v.Outcomes["page"]))

			// Cancel a parked runbook: the first press asks.
			b.do(t, "open the parked runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+parked),
				chromedp.WaitVisible(chromedp.CSS(`button[data-action="cancel"]`)),
				chromedp.Click(chromedp.CSS(`button[data-action="cancel"]`)),
				chromedp.WaitVisible(chromedp.CSS(`.confirm button[data-confirm="yes"]`)))
			require.Contains(t, eval[string](t, b, `document.querySelector(".confirm").textContent`), "compensations of its completed steps undo what they did")
			pv, err := admin.Get(ctx, parked)
			require.NoError(t, err)
			require.Nil(t, pv.FinishedAt, "asking is not cancelling")
			require.LessOrEqual(t, eval[int](t, b, `document.documentElement.scrollWidth`), size.w, "the runbook page scrolls sideways at %dpx", size.w)
			cancelShot := b.shot(t, "cancel-"+size.name)
			b.do(t, "confirm", chromedp.Click(chromedp.CSS(`.confirm button[data-confirm="yes"]`)))
			waitView(t, d, "admin-token", parked, "cancelled", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookCancelled })
			waitEvent(t, admin, parked, rbtype.EventType("RUNBOOK_CANCELLED"), person)
			waitJS(t, b, `!document.querySelector('button[data-action="cancel"]')`)

			require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
			if *updateScreenshots {
				copyScreenshot(t, inbox, "inbox-"+size.name)
				copyScreenshot(t, bulkShot, "gates-bulk-"+size.name)
				copyScreenshot(t, resolveShot, "resolve-"+size.name)
				copyScreenshot(t, cancelShot, "cancel-"+size.name)
			}
		})
	}
}

// waitEvent waits for an event of type typ on a runbook whose data names
// by as who acted.
func waitEvent(t *testing.T, cl *client.Client, id string, typ rbtype.EventType, by string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%s by %s on %s", typ, by, id), func() (bool, error) {
		evs, err := cl.Events(context.Background(), id, 0)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if ev.Type != typ {
				continue
			}
			var data struct{ By string }
			if json.Unmarshal(ev.Data, &data) == nil && data.By == by {
				return true, nil
			}
		}
		return false, nil
	})
}
