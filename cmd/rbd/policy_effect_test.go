package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// Policy follows the effect, and trust is earned (docs/design/semantics.md
// section 17), against the real daemon and PostgreSQL.

// effectVerbs: a lookup tagged read_only and a post with no tags, both
// reaching outside (external_call), and a send tagged external_send.
const effectVerbs = `
- name: ping
  domain: net
  description: Ask a service whether it is up.
  policy_tags: [read_only]
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: post
  domain: net
  description: Post a message somewhere.
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: send
  domain: net
  description: Send a reminder.
  policy_tags: [external_send]
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: broken
  domain: net
  description: A send whose provider refuses it.
  policy_tags: [external_send]
  execution:
    kind: sync
    handler: core.fail
    side_effects: external_call
    params: {code: INVALID_INPUT, message: refused}
`

func policyCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// submitSource submits src; a src of the same plan twice is two runbooks
// when each has its own first line (the idempotency key).
func submitSource(t *testing.T, ctx context.Context, c *client.Client, src string, mode rbtype.Mode) string {
	t.Helper()
	key, _, _ := strings.Cut(src, "\n")
	sub, err := c.Submit(ctx, apitype.SubmitRequest{Source: src, Filename: "t.rbk", Mode: mode, IdempotencyKey: key})
	require.NoError(t, err)
	return sub.ID.String()
}

func eventsOf(t *testing.T, ctx context.Context, c *client.Client, id string) []apitype.Event {
	t.Helper()
	evs, err := c.Events(ctx, id, 0)
	require.NoError(t, err)
	return evs
}

func eventOf(evs []apitype.Event, typ string) *apitype.Event {
	for i := range evs {
		if string(evs[i].Type) == typ {
			return &evs[i]
		}
	}
	return nil
}

func stepOf(v *apitype.RunbookView, key string) *apitype.StepView {
	for i := range v.Steps {
		if v.Steps[i].Key == key {
			return &v.Steps[i]
		}
	}
	return nil
}

// With no policy file, an untagged external_call step waits at a gate the
// built-in policy freezes; a read_only one runs; GET /v1/verbs says so.
func TestWithoutAPolicyAnUntaggedExternalStepWaits(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.builtinPolicy = true
	d := e.start(t, "--verbs", e.file(t, "verbs/net.yaml", effectVerbs))
	ctx, c := policyCtx(t), d.client("")

	id := submitSource(t, ctx, c, "(net.ping :as @ping)\n(net.post :after @ping :as @post)\n", "")
	v, err := c.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.StateAwaitingApproval, v.State)
	require.Equal(t, rbtype.StepComplete, stepOf(v, "ping").Status, "read_only runs unattended")
	post := stepOf(v, "post")
	require.Equal(t, rbtype.StepWaitingApproval, post.Status)
	require.Equal(t, rbtype.GateHumanConfirm, post.Gate)
	ev := eventOf(eventsOf(t, ctx, c, id), "POLICY_GATED")
	require.NotNil(t, ev)
	require.Equal(t, "post", ev.Step)
	require.Contains(t, string(ev.Data), `"rule":"builtin.gate_by_effect"`)

	verbs, err := c.Verbs(ctx, "")
	require.NoError(t, err)
	got := map[string]string{}
	for _, vi := range verbs.Verbs {
		got[vi.Name] = vi.Policy.Action + " " + vi.Policy.Rule
	}
	require.Equal(t, "gate builtin.gate_by_effect", got["net.post"])
	require.Equal(t, "auto_exec builtin.auto_exec", got["net.ping"])
	require.Equal(t, "gate builtin.never_auto_send", got["net.send"])

	_, err = c.Approve(ctx, id, "post", apitype.DecisionRequest{By: "ops"})
	require.NoError(t, err)
	v, err = c.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookComplete, v.Status)
}

// trustOf is a verb's trust as GET /v1/verbs shows it.
func trustOf(t *testing.T, ctx context.Context, c *client.Client, verb string) apitype.TrustView {
	t.Helper()
	verbs, err := c.Verbs(ctx, verb)
	require.NoError(t, err)
	require.Len(t, verbs.Verbs, 1)
	return verbs.Verbs[0].Trust
}

// After 3 approvals under trust: {after: 3} the 4th attempt runs
// unattended (TRUST_EARNED); one rejection resets the count (TRUST_LOST)
// and the next waits again; a failed attempt resets it too. The counts
// are the database's: a restarted daemon keeps them.
func TestTrustIsEarnedByApprovalsAndLostByARejection(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbFile := e.file(t, "verbs/net.yaml", effectVerbs)
	polFile := e.file(t, "policy.yaml", "default:\n  gate: [external_send]\n  trust: {\"net.s*\": {after: 3}, net.broken: {after: 1}}\n")
	d := e.start(t, "--verbs", verbFile, "--policy", polFile)
	ctx, c := policyCtx(t), d.client("")
	send := "(net.send :as @s)\n"

	for i := 1; i <= 3; i++ {
		id := submitSource(t, ctx, c, fmt.Sprintf(";; %d\n", i)+send, "")
		v, err := c.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rbtype.StateAwaitingApproval, v.State, "approval %d", i)
		// The gate panel says how far the verb is from running unattended.
		require.Len(t, v.BlockedOn, 1)
		require.NotNil(t, v.BlockedOn[0].Gate)
		require.Equal(t, &apitype.TrustView{Approvals: i - 1, After: 3, Rule: "default.trust"}, v.BlockedOn[0].Gate.Trust)
		_, err = c.Approve(ctx, id, "s", apitype.DecisionRequest{By: "ops"})
		require.NoError(t, err)
		v, err = c.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, rbtype.RunbookComplete, v.Status)
		if i == 3 {
			ev := eventOf(eventsOf(t, ctx, c, id), "TRUST_EARNED")
			require.NotNil(t, ev, "the third approval earns it")
			require.Contains(t, string(ev.Data), `"approvals":3`)
		} else {
			require.Nil(t, eventOf(eventsOf(t, ctx, c, id), "TRUST_EARNED"))
		}
	}
	require.Equal(t, apitype.TrustView{Approvals: 3, After: 3, Rule: "default.trust", Earned: true}, trustOf(t, ctx, c, "net.send"))
	code, out := e.exitOf(t, []string{"RBD_SERVER=" + d.server}, "verbs", "net.send")
	require.Zero(t, code, out)
	require.Regexp(t, `(?m)^trust +3 of 3 approvals earned: runs unattended \(default.trust\)$`, out)

	// Durable: a daemon started again keeps the count.
	require.Equal(t, 0, d.stop(syscall.SIGTERM))
	d = e.start(t, "--verbs", verbFile, "--policy", polFile)
	c = d.client("")

	fourth := submitSource(t, ctx, c, ";; 4\n"+send, "")
	v, err := c.Wait(ctx, fourth)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookComplete, v.Status, "the 4th runs unattended")
	require.Equal(t, rbtype.GateNone, stepOf(v, "s").Gate)
	require.Nil(t, eventOf(eventsOf(t, ctx, c, fourth), "POLICY_GATED"))

	// One rejection resets it: a call's own gate still asks, and is
	// rejected.
	asked := submitSource(t, ctx, c, "(net.send :gate \"human_confirm\" :as @s)\n", "")
	v, err = c.Wait(ctx, asked)
	require.NoError(t, err)
	require.Equal(t, rbtype.StateAwaitingApproval, v.State)
	_, err = c.Reject(ctx, asked, "s", apitype.DecisionRequest{By: "ops", Comment: "not this one"})
	require.NoError(t, err)
	_, err = c.Wait(ctx, asked)
	require.NoError(t, err)
	lost := eventOf(eventsOf(t, ctx, c, asked), "TRUST_LOST")
	require.NotNil(t, lost)
	require.Contains(t, string(lost.Data), `"approvals_lost":3`)
	require.Contains(t, string(lost.Data), `"earned":true`)
	require.Equal(t, apitype.TrustView{Approvals: 0, After: 3, Rule: "default.trust"}, trustOf(t, ctx, c, "net.send"))
	fifth := submitSource(t, ctx, c, ";; 5\n"+send, "")
	v, err = c.Wait(ctx, fifth)
	require.NoError(t, err)
	require.Equal(t, rbtype.StateAwaitingApproval, v.State, "trust lost: it waits again")

	// A failed attempt resets a count too: net.broken earned after one
	// approval, then fails.
	b1 := submitSource(t, ctx, c, "(net.broken :as @b)\n", "")
	v, err = c.Wait(ctx, b1)
	require.NoError(t, err)
	require.Equal(t, rbtype.StateAwaitingApproval, v.State)
	_, err = c.Approve(ctx, b1, "b", apitype.DecisionRequest{By: "ops"})
	require.NoError(t, err)
	v, err = c.Wait(ctx, b1)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	evs := eventsOf(t, ctx, c, b1)
	require.NotNil(t, eventOf(evs, "TRUST_EARNED"), "approved once: earned")
	require.NotNil(t, eventOf(evs, "TRUST_LOST"), "then its attempt failed")
	require.Equal(t, 0, trustOf(t, ctx, c, "net.broken").Approvals)
}

// A tenant's policy lists the modes it allows: another is 403
// POLICY_DENIED, at submit and at a schedule's creation.
func TestModesUnderPolicy(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	d := e.start(t, "--verbs", e.file(t, "verbs/net.yaml", effectVerbs),
		"--policy", e.file(t, "policy.yaml", "default:\n  modes: [draft_only, dry_run]\n"))
	ctx, c := policyCtx(t), d.client("")
	_, err := c.Submit(ctx, apitype.SubmitRequest{Source: "(net.ping)\n", Filename: "t.rbk"})
	require.ErrorIs(t, err, client.CodePolicyDenied)
	require.ErrorContains(t, err, "mode execute is not allowed for tenant default by default.modes (allowed: draft_only, dry_run)")
	_, err = c.CreateSchedule(ctx, apitype.ScheduleRequest{Name: "h", Cron: "@hourly", Source: "(net.ping)\n", Filename: "t.rbk"})
	require.ErrorIs(t, err, client.CodePolicyDenied)
	id := submitSource(t, ctx, c, "(net.ping)\n", rbtype.ModeDryRun)
	v, err := c.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookComplete, v.Status)
}

// A policy reloaded with a deny stops a parked runbook's next step with
// POLICY_DENIED before it starts; its failure mode (abort) decides.
func TestAStricterPolicyStopsAParkedRunbooksNextStep(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := `
- name: wait
  domain: kyc
  description: Wait for the client's documents.
  policy_tags: [client_request]
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: P9D}
- name: commit
  domain: kyc
  description: Record the decision at the registry.
  policy_tags: [registry_write]
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
`
	polFile := e.file(t, "policy.yaml", "default:\n  auto_exec: [read_only, client_request, registry_write]\n")
	d := e.start(t, "--verbs", e.file(t, "verbs/kyc.yaml", verbs), "--policy", polFile)
	ctx, c := policyCtx(t), d.client("")
	id := submitSource(t, ctx, c, "(kyc.wait :as @docs)\n(kyc.commit :after @docs :as @commit)\n", "")
	v, err := c.WaitUntil(ctx, id, func(v *apitype.RunbookView) bool { return len(v.BlockedOn) == 1 && v.BlockedOn[0].CorrelationKey != "" })
	require.NoError(t, err)
	key := v.BlockedOn[0].CorrelationKey

	require.NoError(t, os.WriteFile(polFile, []byte("default:\n  auto_exec: [read_only, client_request]\n  deny: [registry_write]\n"), 0o600))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	waitUntil(t, "the policy reloaded", func() (bool, error) {
		return strings.Contains(d.logs.String(), "SIGHUP: policy reloaded"), nil
	})
	_, err = c.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: json.RawMessage(`{}`)})
	require.NoError(t, err)
	v, err = c.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	commit := stepOf(v, "commit")
	require.Equal(t, rbtype.StepFailed, commit.Status)
	require.NotNil(t, commit.Error)
	require.Equal(t, rbtype.CodePolicyDenied, commit.Error.Code)
	require.Contains(t, commit.Error.Message, "the policy in force now refuses this step (default.deny)")
	require.Zero(t, commit.Attempt, "it never started")
	require.Equal(t, rbtype.StepComplete, stepOf(v, "docs").Status)
}

// Issue 45 #9: a compensation and an escalation run on behalf of the
// token that submitted the runbook: one outside its scope is refused at
// submission; one the policy gates never runs unattended (it fails
// POLICY_DENIED and nothing reaches the provider); one that may run says
// on whose behalf.
func TestCompensationsAreHeldToTheSubmittersScopeAndThePolicy(t *testing.T) {
	t.Parallel()
	refunds := newRecordingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"refunded": true}`) })
	e := newDaemonEnv(t)
	verbs := fmt.Sprintf(`
- name: charge
  domain: pay
  description: Charge a card (undone by a refund email).
  policy_tags: [ledger_write]
  execution:
    kind: sync
    handler: core.echo
    side_effects: internal_db
    compensation: {verb: mail.refund-notice, args: {to: "@args.to"}}
- name: book
  domain: pay
  description: Book an entry (undone by unbook).
  policy_tags: [ledger_write]
  execution:
    kind: sync
    handler: core.echo
    side_effects: internal_db
    compensation: {verb: pay.unbook, args: {}}
- name: unbook
  domain: pay
  description: Remove an entry.
  policy_tags: [ledger_write]
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
- name: fail
  domain: pay
  description: Always fails.
  execution: {kind: sync, handler: core.fail, side_effects: none, params: {code: INVALID_INPUT}}
- name: refund-notice
  domain: mail
  description: Email the customer that a charge was refunded.
  policy_tags: [external_send]
  input_schema: {properties: {to: {type: string}}}
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {method: POST, url: "%s/refund"}
`, refunds.URL)
	tokens := "agent-token tenant=acme actor=agent roles=submit,read verbs=pay.*\nwide-token tenant=acme actor=wide roles=submit,read,approve\n"
	d := e.start(t, "--verbs", e.file(t, "verbs/pay.yaml", verbs), "--api-token-file", e.file(t, "tokens", tokens),
		"--policy", e.file(t, "policy.yaml", "default:\n  gate: [external_send]\n  auto_exec: [read_only, ledger_write]\n"))
	ctx := policyCtx(t)
	agent, wide := d.client("agent-token"), d.client("wide-token")

	// Outside the submitter's scope: refused at submission, nothing stored.
	_, err := agent.Submit(ctx, apitype.SubmitRequest{Source: "(pay.charge :to \"a@example.com\" :as @c)\n", Filename: "t.rbk"})
	require.ErrorIs(t, err, client.CodeForbidden)
	require.ErrorContains(t, err, `step "c" has compensation verb mail.refund-notice, which this token's scope (verbs=pay.*) does not allow`)

	// In scope, but the policy gates the send: the compensation does not
	// run unattended; the provider sees nothing.
	id := submitSource(t, ctx, wide, "(pay.charge :to \"a@example.com\" :as @c)\n(pay.fail :after @c)\n", "")
	v, err := wide.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	c := stepOf(v, "c")
	require.NotNil(t, c.Compensation)
	require.Equal(t, rbtype.CompensationFailed, c.Compensation.Status)
	require.Contains(t, c.Compensation.Error, "POLICY_DENIED: the policy in force holds verb mail.refund-notice for a person (default.gate")
	require.Empty(t, refunds.requests(), "the refund email never went out")

	// One that may run says on whose behalf it ran.
	id = submitSource(t, ctx, agent, "(pay.book :as @b)\n(pay.fail :after @b)\n", "")
	v, err = agent.Wait(ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.CompensationComplete, stepOf(v, "b").Compensation.Status)
	started := eventOf(eventsOf(t, ctx, agent, id), "COMPENSATION_STARTED")
	require.NotNil(t, started)
	require.Contains(t, string(started.Data), `"on_behalf_of":"agent"`)
}

// The console's gate panel says how far a gated verb is from running
// unattended: "1 of 3 approvals to auto-execute" after one approval.
func TestConsoleGatePanelShowsTrust(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	d := e.start(t, "--verbs", e.file(t, "verbs/net.yaml", effectVerbs),
		"--api-token-file", e.file(t, "tokens", "admin-token\n"),
		"--policy", e.file(t, "policy.yaml", "default:\n  trust: {net.send: {after: 3}}\n"))
	ctx, c := policyCtx(t), d.client("admin-token")
	first := submitSource(t, ctx, c, ";; 1\n(net.send :as @s)\n", "")
	_, err := c.WaitUntil(ctx, first, func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	require.NoError(t, err)
	_, err = c.Approve(ctx, first, "s", apitype.DecisionRequest{})
	require.NoError(t, err)
	second := submitSource(t, ctx, c, ";; 2\n(net.send :as @s)\n", "")
	_, err = c.WaitUntil(ctx, second, func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	require.NoError(t, err)

	b := newBrowser(t, 1280, 800)
	signIn(t, b, d, "admin-token")
	b.do(t, "open the runbook", chromedp.Navigate(d.server+"/ui/#/runbooks/"+second),
		chromedp.WaitVisible(chromedp.CSS(`#gates .gate-card[data-step="s"] button[data-action="approve"]`)))
	require.Equal(t, "1 of 3 approvals to auto-execute",
		eval[string](t, b, `document.querySelector('#gates dd[data-fact="trust"]').textContent`))
	require.Contains(t, eval[string](t, b, `document.querySelector('#gates dd[data-fact="gated by"]').textContent`), "builtin.never_auto_send")
	require.Empty(t, b.problems(), "the page's console:\n%s", b.console())
}
