package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// The person at the gate (docs/daemon.md): the console's inbox, the gate's
// panel, and what a failed runbook shows, in a real browser. The verbs are
// a database failover's: a probe, a pause of writes that a compensation
// undoes, and a high-risk promote whose lag may be at most 5 seconds.
const failoverVerbs = `
- name: probe-lag
  domain: db
  execution: {kind: sync, handler: core.echo, params: {result: {lag_seconds: 3}}, side_effects: none}
  input_schema:
    properties: {cluster: {type: string}}
- name: probe-lag-late
  domain: db
  execution: {kind: sync, handler: core.echo, params: {result: {lag_seconds: 9}}, side_effects: none}
  input_schema:
    properties: {cluster: {type: string}}
- name: pause-writes
  domain: db
  execution:
    kind: sync
    handler: core.echo
    params: {id_field: pause_id}
    side_effects: internal_db
    compensation: {verb: db.resume-writes, args: {pause-id: "@result.pause_id", cluster: "@args.cluster"}}
  input_schema:
    required: [cluster]
    properties: {cluster: {type: string}}
- name: resume-writes
  domain: db
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
  input_schema:
    properties: {pause-id: {type: string}, cluster: {type: string}}
- name: promote
  domain: db
  description: Promote the replica to primary.
  risk: high
  execution: {kind: sync, handler: http.call, params: {url: "https://db-admin.internal/v1/promote"}, side_effects: external_call, level: guarded}
  input_schema:
    required: [cluster, max-lag]
    properties:
      cluster: {type: string}
      max-lag: {type: integer, maximum: 5}
- name: wait-ack
  domain: ops
  policy_tags: [ack_request]
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: P1D}
- name: call-chat
  domain: ops
  execution: {kind: sync, handler: core.fail, params: {code: DEPENDENCY_UNAVAILABLE, message: "chat.internal did not answer"}, side_effects: none}
- name: say
  domain: ops
  execution: {kind: sync, handler: core.echo, side_effects: none}
`

// failover is the runbook: probe, pause, promote.
const failover = `(db.probe-lag :cluster $cluster :as @lag)
(db.pause-writes :cluster $cluster :after @lag :as @pause)
(db.promote :cluster $cluster :max-lag @lag.lag_seconds :after @pause :as @promote)
`

// personDaemon starts rbd with the failover verbs, an admin's token
// (bare: the default tenant, every role) and acme's, under a policy that
// lets the wait for an acknowledgement start unattended (a human_process
// step waits at a gate first otherwise).
func personDaemon(t *testing.T) *daemon {
	t.Helper()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/db.yaml", failoverVerbs)
	tokens := e.file(t, "tokens", "admin-token\nacme-token tenant=acme actor=acme-bot roles=read,submit,approve\n")
	pol := e.file(t, "policy.yaml", "default:\n  auto_exec: [read_only, ack_request]\n")
	return e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--policy", pol)
}

func submitAs(t *testing.T, d *daemon, token string, req apitype.SubmitRequest) string {
	t.Helper()
	sub, err := d.client(token).Submit(context.Background(), req)
	require.NoError(t, err)
	return sub.ID.String()
}

// waitView polls a runbook until cond holds.
func waitView(t *testing.T, d *daemon, token, id, what string, cond func(*apitype.RunbookView) bool) *apitype.RunbookView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := d.client(token).Get(context.Background(), id)
		require.NoError(t, err)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("runbook %s never became %s; it is %s/%s", id, what, v.Status, v.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func signIn(t *testing.T, b *browser, d *daemon, token string) {
	t.Helper()
	b.do(t, "sign in", chromedp.Navigate(d.server+"/ui/"), chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("state-filter")))
}

// TestConsoleInbox: the home lists the runbooks that wait on a person
// first, however old, each with its name and what it waits on, then the
// rest, newest first; it filters by state, and an admin by tenant.
func TestConsoleInbox(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 900)
	d := personDaemon(t)
	in := map[string]any{"cluster": "eu-1"}
	gated := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: failover, Filename: "failover.rbk", Inputs: in, Name: "failover eu-1", Actor: "ops-lead"})
	parked := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: `(ops.wait-ack :as @ack)`, Filename: "page-oncall.rbk"})
	retry := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: `(ops.call-chat :as @post)`, Filename: "post-update.rbk"})
	badArgs := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: strings.ReplaceAll(failover, "probe-lag ", "probe-lag-late "),
		Filename: "failover.rbk", Inputs: map[string]any{"cluster": "us-2"}, Name: "failover us-2"})
	waitView(t, d, "admin-token", badArgs, "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	_, err := d.client("admin-token").Approve(context.Background(), badArgs, "promote", apitype.DecisionRequest{By: "dba-on-call", Comment: "lag checked"})
	require.NoError(t, err)
	done := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: `(ops.say :text "hello")`, Filename: "hello.rbk"})
	acme := submitAs(t, d, "acme-token", apitype.SubmitRequest{Source: failover, Filename: "failover.rbk", Inputs: map[string]any{"cluster": "acme-1"}})
	for id, state := range map[string]string{gated: "awaiting_approval", parked: "parked", retry: "failed", badArgs: "failed", done: "complete"} {
		waitView(t, d, "admin-token", id, state, func(v *apitype.RunbookView) bool {
			return string(v.State) == state && (state != "failed" || v.FinishedAt != nil)
		})
	}
	waitView(t, d, "acme-token", acme, "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })

	signIn(t, b, d, "admin-token")
	ids := func(table string) []string {
		return eval[[]string](t, b, `[...document.querySelectorAll("#`+table+` tbody tr")].map(r => r.dataset.id)`)
	}
	waitJS(t, b, `document.querySelectorAll("#waiting tbody tr").length === 3`)
	require.Equal(t, []string{acme, retry, gated}, ids("waiting"), "what waits on a person, newest first")
	require.Equal(t, []string{done, badArgs, parked}, ids("runbooks"), "then the rest, newest first")
	require.True(t, eval[bool](t, b, `(() => { const w = document.querySelector("#waiting"), r = document.querySelector("#runbooks");
		return !!(w.compareDocumentPosition(r) & Node.DOCUMENT_POSITION_FOLLOWING); })()`), "the inbox comes first, though its oldest is the oldest of all")
	row := func(id string) string {
		return eval[string](t, b, `document.querySelector('tr[data-id="`+id+`"]').textContent`)
	}
	require.Contains(t, row(gated), "failover eu-1", "a name given at submit")
	require.Contains(t, row(gated), "approval of promote")
	require.Contains(t, row(gated), "ops-lead")
	require.Contains(t, row(retry), "post-update", "a name from the file")
	require.Contains(t, row(retry), "a retry of post")
	require.Contains(t, row(parked), "a notification for ack")
	require.NotContains(t, row(badArgs), "retry", "no retry is offered where it would fail the same way")
	require.Contains(t, row(acme), "acme", "an admin sees each runbook's tenant")
	final := b.shot(t, "inbox")

	// By state: one list.
	b.do(t, "filter awaiting approval", chromedp.SetValue(chromedp.ID("state-filter"), "awaiting_approval"))
	eval[bool](t, b, `document.getElementById("state-filter").dispatchEvent(new Event("change"))`)
	waitJS(t, b, `location.hash === "#/?state=awaiting_approval" && !document.getElementById("waiting") && document.querySelectorAll("#runbooks tbody tr").length === 2`)
	require.ElementsMatch(t, []string{gated, acme}, ids("runbooks"))
	// By tenant, for an admin.
	b.do(t, "filter acme", chromedp.SetValue(chromedp.ID("tenant-filter"), "acme"))
	eval[bool](t, b, `document.getElementById("tenant-filter").dispatchEvent(new Event("change"))`)
	waitJS(t, b, `location.hash.includes("tenant=acme") && document.querySelectorAll("#runbooks tbody tr").length === 1`)
	require.Equal(t, []string{acme}, ids("runbooks"))

	// Another tenant's token sees its own, and no tenant filter.
	b2 := newBrowser(t, 390, 844)
	signIn(t, b2, d, "acme-token")
	waitJS(t, b2, `document.querySelectorAll("#waiting tbody tr").length === 1`)
	require.Equal(t, acme, eval[string](t, b2, `document.querySelector("#waiting tbody tr").dataset.id`))
	require.False(t, eval[bool](t, b2, `!!document.getElementById("tenant-filter")`))
	require.LessOrEqual(t, eval[int](t, b2, `document.documentElement.scrollWidth`), 390, "the inbox scrolls sideways at 390px")
	b2.shot(t, "inbox-phone")
	// The header says who is signed in; a token that names its actor
	// decides as that actor, so the gate asks no name.
	require.Contains(t, eval[string](t, b2, `document.getElementById("who").textContent`), "acme-bot")
	b2.do(t, "open acme's runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+acme),
		chromedp.WaitVisible(chromedp.CSS(`#gates button[data-action="approve"][data-step="promote"]`)))
	require.False(t, eval[bool](t, b2, `!!document.querySelector('#gates input[data-by]')`), "no name is asked of a named actor")
	require.True(t, eval[bool](t, b2, `!!document.querySelector('#gates input[data-comment="promote"]')`), "a comment may still be given")
	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
	require.Empty(t, b2.problems(), "the page's console:\n%s", b2.console())
	if *updateScreenshots {
		copyScreenshot(t, final, "inbox")
	}
}

// TestConsoleGatePanel: at a gate, the console says the step's risk, its
// effect and target, its arguments as they will be sent (not the plan's
// placeholders), why it is gated, who submitted it and that it waits
// without a timeout; Approve and Reject need no scrolling at a phone's
// width or a laptop's. The step's page says the same of its frozen gate.
func TestConsoleGatePanel(t *testing.T) {
	t.Parallel()
	d := personDaemon(t)
	id := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: failover, Filename: "failover.rbk",
		Inputs: map[string]any{"cluster": "eu-1"}, Actor: "ops-lead"})
	waitView(t, d, "admin-token", id, "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })

	for _, size := range []struct {
		w, h int
		shot string
	}{{390, 844, "gate-phone"}, {1280, 800, "gate-high-risk"}} {
		b := newBrowser(t, size.w, size.h)
		signIn(t, b, d, "admin-token")
		b.do(t, "open the runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id),
			chromedp.WaitVisible(chromedp.CSS(`#gates .gate-card[data-step="promote"] button[data-action="approve"]`)))
		fact := func(name string) string {
			return eval[string](t, b, `document.querySelector('#gates dd[data-fact="`+name+`"]').textContent`)
		}
		require.Equal(t, "high", fact("risk"))
		require.Equal(t, "external_call on db-admin.internal/v1/promote", fact("effect"))
		require.Contains(t, fact("gated by"), "high risk")
		require.Equal(t, "ops-lead", fact("submitted by"))
		require.Contains(t, fact("times out"), "never")
		require.Contains(t, fact("waiting"), "since")
		args := eval[string](t, b, `document.querySelector("#gates pre.args").textContent`)
		require.Contains(t, args, `"max-lag": 3`, "the lag the probe measured, resolved")
		require.Contains(t, args, `"cluster": "eu-1"`)
		require.NotContains(t, args, "$input")
		require.NotContains(t, args, "$ref")
		// Approve and Reject are on the first screen.
		require.Zero(t, eval[int](t, b, `window.scrollY`))
		for _, action := range []string{"approve", "reject"} {
			bottom := eval[float64](t, b, `document.querySelector('#gates button[data-action="`+action+`"]').getBoundingClientRect().bottom`)
			require.LessOrEqual(t, bottom, float64(size.h), "%s is below the first screen at %dpx: %v", action, size.w, bottom)
		}
		require.LessOrEqual(t, eval[int](t, b, `document.documentElement.scrollWidth`), size.w, "the page scrolls sideways at %dpx", size.w)
		shot := b.shot(t, size.shot)

		// The step's page: resolved arguments, and the frozen gate as it
		// applies.
		b.do(t, "open the step", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id+"/steps/promote"),
			chromedp.WaitVisible(chromedp.ID("resolved-args")))
		require.Contains(t, eval[string](t, b, `document.getElementById("resolved-args").textContent`), `"max-lag": 3`)
		require.Contains(t, eval[string](t, b, `document.getElementById("frozen-args").textContent`), `"$ref": "lag.lag_seconds"`)
		require.Contains(t, eval[string](t, b, `document.getElementById("execution").textContent`), `"gate": "human_confirm"`)
		require.NotContains(t, eval[string](t, b, `document.getElementById("execution").textContent`), `"gate": "none"`)
		gate := eval[string](t, b, `document.querySelector('#step dd[data-fact="gate"]').textContent`)
		require.Contains(t, gate, "human_confirm")
		require.Contains(t, gate, "high risk")
		require.True(t, eval[bool](t, b, `!!document.querySelector('#step button[data-action="approve"]')`))
		stepShot := b.shot(t, "step-"+size.shot)
		require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
		if *updateScreenshots {
			copyScreenshot(t, shot, size.shot)
			if size.w > 400 {
				copyScreenshot(t, stepShot, "step-gate")
			}
		}
	}
}

// TestConsoleAfterFailure: a failover approved at its gate fails after,
// because the lag it promotes with is over the verb's maximum; the pause
// of writes is undone. The console says nothing blocks a finished
// runbook, shows what was undone, shows in the ledger who approved and
// why the step failed, and offers no Retry, which could only fail the same
// way.
func TestConsoleAfterFailure(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 1400)
	d := personDaemon(t)
	id := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: strings.ReplaceAll(failover, "probe-lag ", "probe-lag-late "),
		Filename: "failover.rbk", Inputs: map[string]any{"cluster": "eu-1"}, Actor: "ops-lead"})
	waitView(t, d, "admin-token", id, "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	_, err := d.client("admin-token").Approve(context.Background(), id, "promote", apitype.DecisionRequest{By: "dba-on-call", Comment: "lag checked"})
	require.NoError(t, err)
	v := waitView(t, d, "admin-token", id, "failed and undone", func(v *apitype.RunbookView) bool {
		return v.FinishedAt != nil && v.Steps[stepIndex(t, v, "pause")].Compensation != nil &&
			v.Steps[stepIndex(t, v, "pause")].Compensation.Status == rbtype.CompensationComplete
	})
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	require.Empty(t, v.NextActions)

	signIn(t, b, d, "admin-token")
	b.do(t, "open the runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#undone li[data-step="pause"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#ledger tr[data-type="RUNBOOK_FAILED"]`)))
	require.Contains(t, eval[string](t, b, `document.getElementById("blocked").textContent`), "Nothing: it has finished")
	undone := eval[string](t, b, `document.querySelector('#undone li[data-step="pause"]').textContent`)
	require.Contains(t, undone, "undone")
	require.Contains(t, undone, "db.resume-writes")
	approved := eval[string](t, b, `document.querySelector('#ledger tr[data-type="GATE_APPROVED"]').textContent`)
	require.Contains(t, approved, "approved by dba-on-call: lag checked")
	failed := eval[string](t, b, `document.querySelector('#ledger tr[data-type="STEP_FAILED"]').textContent`)
	require.Contains(t, failed, "SCHEMA_VALIDATION_FAILED: arguments do not match db.promote's input_schema")
	require.Contains(t, eval[string](t, b, `document.getElementById("failures").textContent`), "SCHEMA_VALIDATION_FAILED")
	require.Zero(t, eval[int](t, b, `document.querySelectorAll('button[data-action="retry"]').length`), "no Retry where a retry could only fail the same way")
	require.False(t, eval[bool](t, b, `!!document.querySelector("#gates .gate-card")`), "no gate waits")
	require.Contains(t, eval[string](t, b, `document.getElementById("next").textContent`), "what it did was undone")
	shot := b.shot(t, "runbook-failed")

	// Without a compensation, the failure alone decides: a retry of a step
	// whose arguments do not fit would send them again, and is not
	// offered; one of a step whose dependency was down is.
	bad := submitAs(t, d, "admin-token", apitype.SubmitRequest{Filename: "promote.rbk", Source: `(db.probe-lag-late :cluster "eu-1" :as @lag)
(db.promote :cluster "eu-1" :max-lag @lag.lag_seconds :as @promote)`})
	waitView(t, d, "admin-token", bad, "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	_, err = d.client("admin-token").Approve(context.Background(), bad, "promote", apitype.DecisionRequest{By: "dba-on-call"})
	require.NoError(t, err)
	waitView(t, d, "admin-token", bad, "failed", func(v *apitype.RunbookView) bool { return v.FinishedAt != nil })
	down := submitAs(t, d, "admin-token", apitype.SubmitRequest{Source: `(ops.call-chat :as @post)`, Filename: "post-update.rbk"})
	waitView(t, d, "admin-token", down, "failed", func(v *apitype.RunbookView) bool { return v.FinishedAt != nil })
	b.do(t, "open the runbook whose arguments do not fit", chromedp.Navigate(d.server+"/ui/#/runbooks/"+bad))
	waitJS(t, b, `document.querySelector("main h1").textContent.startsWith("promote ") && !!document.querySelector('#failures li[data-step="promote"]')`)
	require.Contains(t, eval[string](t, b, `document.getElementById("next").textContent`), "a retry would send the same arguments")
	require.Zero(t, eval[int](t, b, `document.querySelectorAll('button[data-action="retry"]').length`))
	b.do(t, "open the runbook whose dependency was down", chromedp.Navigate(d.server+"/ui/#/runbooks/"+down),
		chromedp.WaitVisible(chromedp.CSS(`#next button[data-action="retry"][data-step="post"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#ledger tr[data-type="STEP_FAILED"]`)))
	require.Contains(t, eval[string](t, b, `document.querySelector('#ledger tr[data-type="STEP_FAILED"]').textContent`), "DEPENDENCY_UNAVAILABLE: chat.internal did not answer")
	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
	if *updateScreenshots {
		copyScreenshot(t, shot, "runbook-failed")
	}
}
