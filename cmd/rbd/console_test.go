package main

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// updateScreenshots copies the console test's screenshots to docs/console,
// where the README shows them: go test ./cmd/rbd -run TestConsole
// -update-screenshots. Not by default, since every run's ids and times
// differ and would dirty the work tree.
var updateScreenshots = flag.Bool("update-screenshots", false, "copy the console test's screenshots to docs/console")

const kycDir = "../../examples/runbooks/kyc-onboarding"

// consoleDaemon starts rbd with the KYC example's verbs, a token and a
// webhook secret, and submits the KYC runbook.
func consoleDaemon(t *testing.T) (d *daemon, id string, notifier *client.Client) {
	t.Helper()
	e := newDaemonEnv(t)
	tokens := e.file(t, "tokens", "console-token\n")
	secret := e.file(t, "secret", "console-secret\n")
	d = e.start(t, "--verbs", filepath.Join(kycDir, "verbs"), "--api-token-file", tokens, "--webhook-secret-file", secret)
	src, err := os.ReadFile(filepath.Join(kycDir, "kyc-onboarding.rbk"))
	require.NoError(t, err)
	sub, err := d.client("console-token").Submit(context.Background(), apitype.SubmitRequest{
		Source: string(src), Filename: "kyc-onboarding.rbk",
		Inputs: map[string]any{"client_name": "Acme Holdings SA", "contact_email": "compliance@acme.example"},
	})
	require.NoError(t, err)
	notifier = &client.Client{BaseURL: d.server, WebhookSecret: []byte("console-secret")}
	return d, sub.ID.String(), notifier
}

// TestConsoleKYC walks the KYC example through the console in a real
// browser: sign in, see the runbook in the list, see its six steps with
// the documents step parked, deliver the documents by signed webhook and
// watch the step turn complete without a reload, approve the gate with
// the button, and see the runbook complete.
func TestConsoleKYC(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 800)
	d, id, notifier := consoleDaemon(t)
	ui := d.server + "/ui/"
	final := map[string]string{} // the screenshots the README shows

	// No token: the login prompt, not data.
	b.do(t, "open the console", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.ID("login")))
	b.shot(t, "login")

	// A wrong token is refused, and still no data.
	b.do(t, "sign in with a wrong token",
		chromedp.SendKeys(chromedp.ID("token"), "not-the-token"),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#login .error")))
	require.Contains(t, eval[string](t, b, `document.querySelector("#login .error").textContent`), "refused")
	require.False(t, eval[bool](t, b, `!!document.getElementById("runbooks")`), "a wrong token must not show runbooks")
	require.Empty(t, eval[string](t, b, `sessionStorage.getItem("rbd-token") || ""`), "a refused token is forgotten")

	// The right token: the list, with the runbook in it.
	b.do(t, "sign in",
		chromedp.SendKeys(chromedp.ID("token"), "console-token"),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#runbooks a[href="#/runbooks/`+id+`"]`)))
	require.Empty(t, eval[string](t, b, `document.cookie`), "the token is never a cookie")
	b.shot(t, "list")

	// The runbook: six steps, the documents step parked with its key.
	b.do(t, "open the runbook",
		chromedp.Click(chromedp.CSS(`#runbooks a[href="#/runbooks/`+id+`"]`)),
		chromedp.WaitReady(chromedp.CSS(`.node[data-key="docs"][data-status="parked"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#blocked li[data-step="docs"]`)))
	require.Equal(t, 6, eval[int](t, b, `document.querySelectorAll("#graph .node").length`))
	require.Positive(t, eval[int](t, b, `document.querySelectorAll("#graph .edge.sequence").length`), "close-case runs :after the approval: a sequence edge")
	require.Positive(t, eval[int](t, b, `document.querySelectorAll("#graph .edge.data").length`))
	view, err := d.client("console-token").Get(context.Background(), id)
	require.NoError(t, err)
	key := view.BlockedOn[0].CorrelationKey
	blocked := eval[string](t, b, `document.querySelector('#blocked li[data-step="docs"]').textContent`)
	require.Contains(t, blocked, key)
	require.Contains(t, blocked, "parked since")
	require.Contains(t, blocked, "times out")
	require.Contains(t, eval[string](t, b, `document.querySelector('#next li[data-kind="notify"]').textContent`), "rbd notify "+key,
		"what would move it, with the command")
	b.do(t, "the ledger follows", chromedp.WaitVisible(chromedp.CSS("#ledger tbody tr")), chromedp.WaitVisible(chromedp.CSS(".live.on")))
	final["runbook-parked"] = b.shot(t, "runbook-parked")

	// The documents arrive by signed webhook: the step turns complete on
	// the page that is open. The marker proves the page never reloaded.
	eval[bool](t, b, `window.stillTheSamePage = true`)
	_, err = notifier.Notify(context.Background(), apitype.NotificationRequest{
		CorrelationKey: key, Status: rbtype.OutcomeCompleted,
		Result: json.RawMessage(`{"documents": [{"type": "passport", "url": "s3://kyc/acme/passport.pdf"}]}`),
	})
	require.NoError(t, err)
	b.do(t, "see the documents step complete",
		chromedp.WaitReady(chromedp.CSS(`.node[data-key="docs"][data-status="complete"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[data-action="approve"][data-step="approval"]`)))
	require.True(t, eval[bool](t, b, `window.stillTheSamePage === true`), "the page reloaded")
	final["runbook-gate"] = b.shot(t, "runbook-gate")

	// Approve with the button: the runbook completes, still without a reload.
	b.do(t, "approve the gate",
		chromedp.SendKeys(chromedp.CSS(`#gates input[data-by="approval"]`), "compliance-officer"),
		chromedp.Click(chromedp.CSS(`button[data-action="approve"][data-step="approval"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.toolbar .badge.s-complete`)),
		chromedp.WaitReady(chromedp.CSS(`.node[data-key="approval"][data-status="complete"]`)))
	require.True(t, eval[bool](t, b, `window.stillTheSamePage === true`), "the page reloaded")
	require.Equal(t, 6, eval[int](t, b, `document.querySelectorAll('#graph .node[data-status="complete"]').length`))
	view, err = d.client("console-token").Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookComplete, view.Status)
	require.Equal(t, "compliance-officer", view.Steps[stepIndex(t, view, "approval")].GateDecision.By)
	b.do(t, "the ledger ends", chromedp.WaitVisible(chromedp.CSS(`#ledger tr[data-event]`)))
	final["runbook"] = b.shot(t, "runbook")

	// One step, reached from the graph with the keyboard: its arguments,
	// result, attempts, frozen execution block.
	require.True(t, eval[bool](t, b, `(() => { const n = document.querySelector('#graph .node[data-key="docs"]'); n.focus(); return document.activeElement === n; })()`),
		"a step's node takes the keyboard's focus")
	b.do(t, "open the documents step with Enter", chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("step")))
	require.Equal(t, ui+"#/runbooks/"+id+"/steps/docs", eval[string](t, b, `location.href`))
	page := eval[string](t, b, `document.querySelector("main").textContent`)
	for _, want := range []string{"Arguments", "document-types", "Execution block", "await.notification", "passport", "attempts"} {
		require.Contains(t, page, want)
	}
	final["step"] = b.shot(t, "step")

	// A phone's width: the same page, one column.
	b.do(t, "a phone's width",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(ui+"#/runbooks/"+id),
		chromedp.WaitReady(chromedp.CSS(`.node[data-status="complete"]`)))
	require.LessOrEqual(t, eval[int](t, b, `document.documentElement.scrollWidth`), 390, "the page scrolls sideways at 390px")
	final["runbook-phone"] = b.shot(t, "runbook-phone")
	b.do(t, "back to a laptop", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.ID("runbooks")))
	final["list"] = b.shot(t, "list")

	// A token that stops working (rotated away): the login prompt again.
	eval[bool](t, b, `(sessionStorage.setItem("rbd-token", "rotated-away"), true)`)
	b.do(t, "a stale token", chromedp.Navigate(ui+"#/runbooks/"+id), chromedp.WaitVisible(chromedp.ID("login")))
	require.False(t, eval[bool](t, b, `!!document.getElementById("graph")`))
	require.True(t, eval[bool](t, b, `document.getElementById("who").hidden`), "a refused token signs no one in")
	final["login"] = b.shot(t, "login-refused")

	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
	if *updateScreenshots {
		for name, p := range final {
			copyScreenshot(t, p, name)
		}
	}
}

// copyScreenshot copies a screenshot to docs/console/name.png.
func copyScreenshot(t testing.TB, from, name string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll("../../docs/console", 0o755))
	require.NoError(t, os.WriteFile(filepath.Join("../../docs/console", name+".png"), raw, 0o644))
}

func stepIndex(t *testing.T, v *apitype.RunbookView, key string) int {
	t.Helper()
	for i, s := range v.Steps {
		if s.Key == key {
			return i
		}
	}
	t.Fatalf("no step %s", key)
	return -1
}

// TestConsoleHeaders checks what the browser is told about the console's
// files: a strict Content-Security-Policy, no sniffing, no framing; and
// that --ui=false serves no console.
func TestConsoleHeaders(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	d := e.start(t)
	for _, path := range []string{"/ui/", "/ui/console.js", "/ui/console.css"} {
		resp, err := http.Get(d.server + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "default-src 'self'", path)
		require.Contains(t, csp, "frame-ancestors 'none'", path)
		require.NotContains(t, csp, "unsafe-inline", path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}
	off := e.start(t, "--ui=false")
	resp, err := http.Get(off.server + "/ui/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestConsoleListPages pages through 120 runbooks 50 at a time with the
// API's cursor, forwards and back, and filters them by status.
func TestConsoleListPages(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 800)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	// No worker: the runbooks stay executing, and the test decides what
	// the list holds.
	d := e.start(t, "--verbs", verbs, "--worker=false")
	cl := d.client("")
	for i := range 120 {
		_, err := cl.Submit(context.Background(), apitype.SubmitRequest{
			Source: `(t.echo :v $n :as @e)`, Inputs: map[string]any{"n": strconv.Itoa(i)},
		})
		require.NoError(t, err)
	}
	rows := func() int { return eval[int](t, b, `document.querySelectorAll("#runbooks tbody tr").length`) }
	first := func() string { return eval[string](t, b, `document.querySelector("#runbooks tbody tr").dataset.id`) }

	// The API is open (no --api-token-file): no sign-in prompt.
	b.do(t, "open the list", chromedp.Navigate(d.server+"/ui/"), chromedp.WaitVisible(chromedp.ID("runbooks")))
	require.Equal(t, 50, rows())
	newest := first()
	seen := map[string]bool{}
	collect := func() {
		for _, id := range eval[[]string](t, b, `[...document.querySelectorAll("#runbooks tbody tr")].map(r => r.dataset.id)`) {
			require.False(t, seen[id], "runbook %s on two pages", id)
			seen[id] = true
		}
	}
	collect()
	older := chromedp.CSS(`button[data-nav="older"]`)
	newer := chromedp.CSS(`button[data-nav="newer"]`)
	// turn clicks a paging button and waits for a page of n rows other
	// than the one shown before the click.
	turn := func(what string, button chromedp.CSS, n int) {
		t.Helper()
		before := first()
		b.do(t, what, chromedp.Click(button))
		waitJS(t, b, `document.querySelectorAll("#runbooks tbody tr").length === `+strconv.Itoa(n)+
			` && document.querySelector("#runbooks tbody tr").dataset.id !== "`+before+`"`)
	}
	turn("page 2", older, 50)
	require.Contains(t, eval[string](t, b, `location.hash`), "after=", "the cursor is in the page's address")
	collect()
	turn("page 3", older, 20)
	collect()
	require.Len(t, seen, 120)
	require.True(t, eval[bool](t, b, `document.querySelector('button[data-nav="older"]').disabled`), "the last page has no older one")
	turn("back to page 2", newer, 50)
	b.do(t, "back to page 1", chromedp.Click(newer))
	waitJS(t, b, `document.querySelector("#runbooks tbody tr").dataset.id === "`+newest+`"`)
	b.shot(t, "list-paged")

	// Filtered: none is complete, all are executing.
	eval[bool](t, b, `(() => { const s = document.getElementById("state-filter"); s.value = "complete"; return s.dispatchEvent(new Event("change")); })()`)
	waitJS(t, b, `document.body.textContent.includes("No runbooks in state complete")`)
	eval[bool](t, b, `(() => { const s = document.getElementById("state-filter"); s.value = "executing"; return s.dispatchEvent(new Event("change")); })()`)
	waitJS(t, b, `location.hash === "#/?state=executing" && document.querySelectorAll("#runbooks tbody tr").length === 50`)
	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
}

// waitJS waits until a JavaScript expression on the page is true.
func waitJS(t *testing.T, b *browser, expr string) {
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr)); err != nil {
		t.Fatalf("waiting for %s: %v\nconsole:\n%s", expr, err, b.console())
	}
}

// TestConsoleReject rejects a gate from the step's own page, using the
// keyboard only: the decision reaches the API with who made it, and the
// page shows it without a reload.
func TestConsoleReject(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 390, 844)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	d := e.start(t, "--verbs", verbs)
	sub, err := d.client("").Submit(context.Background(), apitype.SubmitRequest{Source: `(t.echo :v "x" :gate "human_confirm" :as @g)`})
	require.NoError(t, err)
	id := sub.ID.String()

	b.do(t, "open the step", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id+"/steps/g"),
		chromedp.WaitVisible(chromedp.CSS(`#step button[data-action="reject"]`)))
	eval[bool](t, b, `window.stillTheSamePage = true`)
	b.do(t, "reject with the keyboard",
		chromedp.Focus(chromedp.CSS(`#step input[data-by="g"]`)),
		chromedp.KeyEvent("risk-officer\tnot today\t\t"), // the name, the comment, then past Approve to Reject
		chromedp.KeyEvent("\r"))
	waitJS(t, b, `document.querySelector("#step").textContent.includes("rejected by risk-officer")`)
	require.Contains(t, eval[string](t, b, `document.querySelector("#step").textContent`), "not today", "the comment goes with the decision")
	require.True(t, eval[bool](t, b, `window.stillTheSamePage === true`), "the page reloaded")
	v, err := d.client("").Get(context.Background(), id)
	require.NoError(t, err)
	g := v.Steps[stepIndex(t, v, "g")]
	require.NotNil(t, g.GateDecision)
	require.Equal(t, "risk-officer", g.GateDecision.By)
	if shot := b.shot(t, "step-rejected-phone"); *updateScreenshots {
		copyScreenshot(t, shot, "step-rejected-phone")
	}

	// The runbook's page lists the failure and offers a retry, which asks
	// the gate again.
	b.do(t, "open the runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id),
		chromedp.WaitVisible(chromedp.CSS(`#failures li[data-step="g"]`)))
	require.Contains(t, eval[string](t, b, `document.querySelector('#failures li[data-step="g"]').textContent`), "POLICY_DENIED")
	b.do(t, "retry from the page", chromedp.Click(chromedp.CSS(`#next button[data-action="retry"][data-step="g"]`)))
	waitJS(t, b, `!!document.querySelector('#gates .gate-card[data-step="g"] button[data-action="approve"]')`)
	v, err = d.client("").Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, rbtype.StepWaitingApproval, v.Steps[stepIndex(t, v, "g")].Status, "the retried gate asks again")
	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
}

// TestConsoleApprovesAsTheSignedInActor: signed in with a token whose
// line names its actor, the console says who is signed in and asks no
// name at a gate; the approval is recorded under that actor.
func TestConsoleApprovesAsTheSignedInActor(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 800)
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "submitter-token\ndana-token actor=dana roles=read,approve\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)
	sub, err := d.client("submitter-token").Submit(context.Background(), apitype.SubmitRequest{Source: `(t.echo :v "x" :gate "human_confirm" :as @g)`})
	require.NoError(t, err)
	id := sub.ID.String()

	b.do(t, "sign in as dana", chromedp.Navigate(d.server+"/ui/#/runbooks/"+id),
		chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("token"), "dana-token"),
		chromedp.Click(chromedp.CSS(`#login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#gates button[data-action="approve"][data-step="g"]`)))
	require.Equal(t, "Signed in as dana (default)", eval[string](t, b, `document.getElementById("who").textContent`))
	require.False(t, eval[bool](t, b, `!!document.querySelector("input[data-by]")`), "no name is asked")
	b.do(t, "approve without a name", chromedp.Click(chromedp.CSS(`#gates button[data-action="approve"][data-step="g"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.toolbar .badge.s-complete`)))
	v, err := d.client("submitter-token").Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "dana", v.Steps[stepIndex(t, v, "g")].GateDecision.By)
	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
}

// TestConsolePolicyBlocksInlineCode checks that the browser enforces the
// console's Content-Security-Policy: script and style that reach the page
// as data (here, planted by the test) do not run, and the page reports
// them, as the other tests' empty problem lists would.
func TestConsolePolicyBlocksInlineCode(t *testing.T) {
	t.Parallel()
	b := newBrowser(t, 1280, 800)
	d := newDaemonEnv(t).start(t)
	b.do(t, "open the console", chromedp.Navigate(d.server+"/ui/"), chromedp.WaitVisible(chromedp.ID("state-filter")))
	eval[bool](t, b, `(() => {
		const s = document.createElement("script");
		s.textContent = "window.planted = true";
		document.body.append(s);
		document.body.setAttribute("style", "display: none");
		return true;
	})()`)
	require.False(t, eval[bool](t, b, `window.planted === true`), "an inline script ran")
	require.True(t, eval[bool](t, b, `getComputedStyle(document.body).display !== "none"`), "an inline style applied")
	deadline := time.Now().Add(10 * time.Second)
	for len(b.problems()) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.Len(t, b.problems(), 2, "both violations are reported:\n%s", b.console())
}
