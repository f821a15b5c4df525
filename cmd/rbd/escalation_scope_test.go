package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// escalationScopeVerbs: two waits that escalate at their 4 s timeout,
// one paging through pager.page (an http.call to url, tagged
// external_send, which the test's policy gates), the other through
// ops.note (tagged notify, which it runs unattended). A call's
// :remind-after (the script's, so that a daemon older than reminders
// still loads the file, RBD_TEST_DAEMON) runs the same verb earlier.
func escalationScopeVerbs(url string) string {
	return fmt.Sprintf(`
- name: await
  domain: ops
  description: Wait for the change window; page on-call if it never opens.
  policy_tags: [ledger_write]
  execution:
    kind: durable
    handler: await.notification
    side_effects: internal_db
    timeouts:
      park_timeout: PT4S
      on_timeout: escalate
      escalation: {verb: pager.page, args: {who: oncall}}
- name: await-noted
  domain: ops
  description: Wait for the change window; note it in the log if it never opens.
  policy_tags: [ledger_write]
  execution:
    kind: durable
    handler: await.notification
    side_effects: internal_db
    timeouts:
      park_timeout: PT4S
      on_timeout: escalate
      escalation: {verb: ops.note, args: {who: oncall}}
- name: note
  domain: ops
  description: Note something in the team's log.
  policy_tags: [notify]
  input_schema: {properties: {who: {type: string}}}
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
- name: page
  domain: pager
  description: Page a person.
  policy_tags: [external_send]
  input_schema: {properties: {who: {type: string}}}
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {method: POST, url: "%s/page"}
`, url)
}

// Under attack (docs/reliability.md), issue 45's row 9, its escalation
// half: a wait's reminder and its timeout's escalation run on behalf of
// the token that submitted the runbook (machine/verb_call_scope.go),
// through the same check as a compensation. An escalation verb outside
// that token's scope is refused at submission; one the policy gates never
// runs unattended, neither as the reminder nor as the timeout's page (each
// fails POLICY_DENIED and the provider sees nothing); one that may run
// says in the ledger on whose behalf it ran.
func TestEscalationsAreHeldToTheSubmittersScopeAndThePolicy(t *testing.T) {
	t.Parallel()
	pager := newRecordingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"paged": true}`) })
	e := newDaemonEnv(t)
	tokens := "agent-token tenant=acme actor=agent roles=submit,read verbs=ops.*\nwide-token tenant=acme actor=wide roles=submit,read,approve\n"
	d := e.start(t, "--verbs", e.file(t, "verbs/ops.yaml", escalationScopeVerbs(pager.URL)), "--api-token-file", e.file(t, "tokens", tokens),
		"--policy", e.file(t, "policy.yaml", "default:\n  gate: [external_send]\n  auto_exec: [read_only, ledger_write, notify]\n"))
	ctx := policyCtx(t)
	agent, wide := d.client("agent-token"), d.client("wide-token")

	// In scope, but the policy gates the page: neither the timeout's
	// escalation nor a reminder runs unattended.
	paged := submitSource(t, ctx, wide, "(ops.await :as @w)\n", "")
	reminded := submitSource(t, ctx, wide, ";; reminded\n(ops.await :remind-after \"PT1S\" :as @w)\n", "")
	for _, c := range []struct {
		id      string
		refusal int
	}{{paged, 1}, {reminded, 2}} {
		v, err := wide.WaitUntil(ctx, c.id, client.Finished)
		require.NoError(t, err)
		require.Equal(t, rbtype.RunbookEscalated, v.Status)
		w := stepOf(v, "w")
		require.NotNil(t, w.Escalation, "the escalation is recorded")
		evs := eventsOf(t, ctx, wide, c.id)
		var refused []string
		for _, ev := range evs {
			switch ev.Type {
			case rbtype.EventEscalationStarted, rbtype.EventEscalationSucceeded:
				t.Fatalf("the gated page ran: %s %s", ev.Type, ev.Data)
			case rbtype.EventEscalationFailed:
				require.Contains(t, string(ev.Data), "POLICY_DENIED")
				refused = append(refused, string(ev.Data))
			}
		}
		require.Empty(t, pager.requests(), "nobody was paged")
		require.Equal(t, rbtype.CompensationFailed, w.Escalation.Status)
		require.Contains(t, w.Escalation.Error, "POLICY_DENIED: the policy in force holds verb pager.page for a person (default.gate")
		if c.refusal == 2 {
			require.NotNil(t, eventOf(evs, string(rbtype.EventStepReminded)), "the reminder came while the step waited")
		}
		require.Len(t, refused, c.refusal, "the timeout's page, and the reminder where there is one, each refused: %v", refused)
	}

	// Outside the submitter's scope: refused at submission, nothing stored.
	_, err := agent.Submit(ctx, apitype.SubmitRequest{Source: "(ops.await :as @w)\n", Filename: "t.rbk"})
	require.ErrorIs(t, err, client.CodeForbidden)
	require.ErrorContains(t, err, `step "w" has escalation verb pager.page, which this token's scope (verbs=ops.*) does not allow`)
	list, err := agent.List(ctx, client.ListRequest{})
	require.NoError(t, err)
	for _, r := range list.Runbooks {
		require.NotEqual(t, "agent", r.Actor, "a refused submission stores nothing")
	}

	// One that may run: the reminder and the page each say in the ledger
	// on whose behalf they ran.
	id := submitSource(t, ctx, agent, "(ops.await-noted :remind-after \"PT1S\" :as @w)\n", "")
	v, err := agent.WaitUntil(ctx, id, client.Finished)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookEscalated, v.Status)
	require.Equal(t, rbtype.CompensationComplete, stepOf(v, "w").Escalation.Status)
	started := func() (out []string) {
		for _, ev := range eventsOf(t, ctx, agent, id) {
			if ev.Type == rbtype.EventEscalationStarted {
				out = append(out, string(ev.Data))
			}
		}
		return out
	}
	require.Len(t, started(), 2, "the reminder and the timeout's page: %v", started())

	// Retried, the wait reminds and times out again under the same keys:
	// the first calls' receipts answer, and say so on the same behalf.
	_, err = wide.Retry(ctx, id, apitype.RetryRequest{Steps: []string{"w"}})
	require.NoError(t, err)
	waitUntil(t, "the retried wait to escalate again", func() (bool, error) { return len(started()) == 4, nil })
	v, err = agent.WaitUntil(ctx, id, client.Finished)
	require.NoError(t, err)
	require.Equal(t, rbtype.RunbookEscalated, v.Status)
	receipts := 0
	for _, ev := range eventsOf(t, ctx, agent, id) {
		if ev.Type == rbtype.EventEscalationSucceeded && strings.Contains(string(ev.Data), `"receipt":true`) {
			receipts++
		}
	}
	require.Equal(t, 2, receipts, "the retry's reminder and page were answered by receipts")
	for _, s := range started() {
		require.True(t, strings.Contains(s, `"on_behalf_of":"agent"`), "ESCALATION_STARTED names the submitter: %s", s)
	}
}
