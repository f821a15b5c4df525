package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// An effect happens once (docs/design/semantics.md section 16;
// docs/reliability.md, "Effects once"): each test fails on a daemon built
// before it (RBD_TEST_DAEMON), where the effect happened again.

// sendSink is a provider that counts the requests it is sent, by path, with
// their Idempotency-Key headers, and answers each with answer.
type sendSink struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]string // path → idempotency keys, in order
}

func newSendSink(t *testing.T, answer string) *sendSink {
	s := &sendSink{seen: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen[r.URL.Path] = append(s.seen[r.URL.Path], r.Header.Get("Idempotency-Key"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer)
	}))
	t.Cleanup(s.Close)
	return s
}

// keys returns the idempotency keys the requests to path carried.
func (s *sendSink) keys(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen[path]...)
}

// waitStopped waits until a runbook is no longer running, or waits on a
// person or the outside world.
func waitStopped(t *testing.T, d *daemon, id string) *apitype.RunbookView {
	t.Helper()
	var v *apitype.RunbookView
	waitUntil(t, "runbook "+id+" to stop", func() (bool, error) {
		var err error
		v, err = d.client("").Get(context.Background(), id)
		return err == nil && v.Settled(), err
	})
	return v
}

const emailVerbs = `
- name: send
  domain: email
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    params: {url: "%s/send"}
- name: archive
  domain: t
  execution: {kind: sync, handler: core.fail, side_effects: none, params: {code: INVALID_INPUT, message: the archive is read-only}}
`

// TestResubmittedAfterAFailureSendsNothingAgain: a runbook whose step sent
// an email fails later on; the same plan and inputs submitted again
// without an Idempotency-Key join its lineage and send nothing again (the
// send's receipt answers), and the answer says which lineage it joined.
// rbd submit --new starts a fresh lineage: the email goes again, and the
// answer says that effects may repeat.
func TestResubmittedAfterAFailureSendsNothingAgain(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	sink := newSendSink(t, `{"message_id": "m-1"}`)
	d := e.start(t, "--verbs", e.file(t, "verbs/t.yaml", fmt.Sprintf(emailVerbs, sink.URL)))
	cl := d.client("")
	ctx := context.Background()
	source := `(email.send :to $to :subject "welcome" :as @mail)
(t.archive :message @mail.message_id)`
	req := apitype.SubmitRequest{Source: source, Filename: "welcome.rbk", Inputs: map[string]any{"to": "ada@example.com"}}

	first, err := cl.Submit(ctx, req)
	require.NoError(t, err)
	v := waitStopped(t, d, first.ID.String())
	require.Equal(t, rbtype.RunbookFailed, v.Status)
	require.Len(t, sink.keys("/send"), 1, "the email went once")

	again, err := cl.Submit(ctx, req)
	require.NoError(t, err)
	require.True(t, again.Created, "a failed run's plan and inputs run again")
	require.NotEqual(t, first.ID, again.ID)
	v = waitStopped(t, d, again.ID.String())
	require.Equal(t, rbtype.RunbookFailed, v.Status, "the archive still fails")
	require.Len(t, sink.keys("/send"), 1, "the email was not sent again: its receipt answered")
	require.NotNil(t, again.JoinedFailed, "the answer says which lineage it joined: %+v", again)
	require.Equal(t, first.ID, *again.JoinedFailed)
	require.Equal(t, first.ID, again.Lineage.Root)
	require.Equal(t, 1, again.Lineage.Generation)
	require.False(t, again.EffectsMayRepeat)
	require.Contains(t, again.Message, "joins its lineage")
	require.Equal(t, first.ID, *v.Lineage.Parent)
	evs, err := cl.Events(ctx, again.ID.String(), 0)
	require.NoError(t, err)
	var fromReceipt, regenerated bool
	for _, ev := range evs {
		fromReceipt = fromReceipt || ev.Type == rbtype.EventStepSucceeded && ev.Step == "mail" && strings.Contains(string(ev.Data), `"receipt":true`)
		regenerated = regenerated || ev.Type == rbtype.EventRunbookRegenerated
	}
	require.True(t, fromReceipt, "the send completed from its receipt")
	require.True(t, regenerated, "the ledger says where the run came from")

	// A third submission joins the second's lineage: the same root, one
	// generation more, and still no second email.
	third, err := cl.Submit(ctx, req)
	require.NoError(t, err)
	require.Equal(t, again.ID, *third.JoinedFailed)
	require.Equal(t, 2, third.Lineage.Generation)
	waitStopped(t, d, third.ID.String())
	require.Len(t, sink.keys("/send"), 1)

	// --new: a fresh lineage, and the email goes again.
	file := e.file(t, "welcome.rbk", source)
	status, out := e.exitOf(t, []string{"RBD_SERVER=" + d.server}, "submit", file, "--new", "--input", "to=ada@example.com")
	require.Equal(t, 0, status, out)
	require.Contains(t, out, "effects that earlier runs of this plan and inputs had may happen again")
	waitUntil(t, "the new lineage's email", func() (bool, error) { return len(sink.keys("/send")) == 2, nil })
	keys := sink.keys("/send")
	require.NotEqual(t, keys[0], keys[1], "under a key of its own")

	fresh, err := cl.Submit(ctx, apitype.SubmitRequest{Source: source, Inputs: req.Inputs, NewLineage: true})
	require.NoError(t, err)
	require.True(t, fresh.Created)
	require.True(t, fresh.EffectsMayRepeat)
	require.Nil(t, fresh.JoinedFailed)
	require.Equal(t, fresh.ID, fresh.Lineage.Root, "its own root")
	require.Equal(t, 0, fresh.Lineage.Generation)
}

// Under attack (docs/reliability.md), round 4 row 7: after a prune, a
// runbook submitted again (the same request, so the same id and step
// keys) finds the receipts its pruned namesake's effects left, and sends
// nothing again.
func TestResubmittedAfterAPruneSendsNothingAgain(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	sink := newSendSink(t, `{"message_id": "m-1"}`)
	d := e.start(t, "--verbs", e.file(t, "verbs/t.yaml", fmt.Sprintf(emailVerbs, sink.URL)))
	cl := d.client("")
	ctx := context.Background()
	req := apitype.SubmitRequest{Source: `(email.send :to $to :subject "welcome" :as @mail)`, Inputs: map[string]any{"to": "ada@example.com"}}
	first, err := cl.Submit(ctx, req)
	require.NoError(t, err)
	v := waitStopped(t, d, first.ID.String())
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.Len(t, sink.keys("/send"), 1)

	status, out := e.exitOf(t, nil, "prune", "--finished-before", "0s")
	require.Equal(t, 0, status, out)
	require.Contains(t, out, "pruned 1 runbook")

	again, err := cl.Submit(ctx, req)
	require.NoError(t, err)
	require.True(t, again.Created, "the pruned runbook's request is free again")
	v = waitStopped(t, d, again.ID.String())
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.JSONEq(t, `{"message_id": "m-1"}`, string(v.Outcomes["mail"]), "the receipt's result")
	require.Len(t, sink.keys("/send"), 1, "the email was not sent again after the prune")
}

// TestKilledDuringACallToAProviderThatIgnoresKeys: rbd is killed (SIGKILL)
// while a step calls a provider that ignores idempotency keys
// (provider_dedupes: false). The next daemon does not call it again: the
// step is in_doubt, in blocked_on and the inbox, and the provider saw one
// call; a person's resolution completes the runbook.
func TestKilledDuringACallToAProviderThatIgnoresKeys(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	server := newBodyServer(t, true, `{"charged": true}`)
	verbs := e.file(t, "verbs/t.yaml", fmt.Sprintf(`
- name: charge
  domain: pay
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    idempotency: {provider_dedupes: false}
    params: {url: "%s/charge"}
    timeouts: {run_timeout: PT60S}
- name: echo
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
`, server.URL))
	first := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	ctx := context.Background()
	sub, err := first.client("").Submit(ctx, apitype.SubmitRequest{Source: `(pay.charge :amount 42 :as @charge)
(t.echo :charged @charge.charged :as @receipt)`})
	require.NoError(t, err)
	waitClosed(t, server.reached, "the charge's call", first)
	require.Equal(t, -1, first.stop(syscall.SIGKILL), "killed by the signal, no exit status")

	second := e.start(t, "--verbs", verbs, "--lease-ttl", "1s")
	cl := second.client("")
	v := waitStopped(t, second, sub.ID.String())
	require.Equal(t, rbtype.RunbookExecuting, v.Status)
	require.Equal(t, rbtype.StateInDoubt, v.State)
	require.Equal(t, rbtype.StepInDoubt, v.Steps[0].Status)
	require.Equal(t, []apitype.BlockedView{{Step: "charge", Reason: apitype.BlockedInDoubt, Message: v.BlockedOn[0].Message}}, v.BlockedOn)
	require.Contains(t, v.BlockedOn[0].Message, "resolve")
	keys, _ := server.seen()
	require.Len(t, keys, 1, "the provider saw one call")
	person := true
	inbox, err := cl.List(ctx, client.ListRequest{NeedsPerson: &person})
	require.NoError(t, err)
	require.Len(t, inbox.Runbooks, 1, "the runbook is in the inbox")
	require.Equal(t, sub.ID, inbox.Runbooks[0].ID)
	evs, err := cl.Events(ctx, sub.ID.String(), 0)
	require.NoError(t, err)
	var inDoubt int
	for _, ev := range evs {
		if ev.Type == rbtype.EventStepInDoubt {
			inDoubt++
		}
	}
	require.Equal(t, 1, inDoubt, "STEP_IN_DOUBT")

	// The person checked with the provider: the charge went through.
	_, err = cl.Resolve(ctx, sub.ID.String(), "charge", apitype.ResolveRequest{Action: "complete", Result: []byte(`{"charged": true}`)})
	require.NoError(t, err)
	v = waitFinished(t, second, sub.ID.String())
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.JSONEq(t, `{"charged": true}`, string(v.Outcomes["receipt"]))
	keys, _ = server.seen()
	require.Len(t, keys, 1, "and was never called again")
	require.Equal(t, 0, second.stop(syscall.SIGTERM))
}

// TestAnEscalationPagesOncePerKey: a wait that times out, is retried, and
// times out again escalates twice; its escalation verb, keyed by its own
// idempotency block (the incident), pages once, and the second escalation
// takes the first page's receipt.
func TestAnEscalationPagesOncePerKey(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	sink := newSendSink(t, `{"page_id": "p-1"}`)
	d := e.start(t, "--verbs", e.file(t, "verbs/t.yaml", fmt.Sprintf(`
- name: wait
  domain: t
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1S, on_timeout: escalate, escalation: {verb: ops.page, args: {incident: "@args.incident"}}}
- name: page
  domain: ops
  execution:
    kind: sync
    handler: http.call
    side_effects: external_call
    idempotency: {scope: runbook_step, key_fields: [incident]}
    params: {url: "%s/page"}
  input_schema:
    properties:
      incident: {type: string}
`, sink.URL)))
	cl := d.client("")
	ctx := context.Background()
	sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: `(t.wait :incident "inc-7" :as @ack)`})
	require.NoError(t, err)
	id := sub.ID.String()
	escalations := func() (succeeded int, fromReceipt int) {
		evs, err := cl.Events(ctx, id, 0)
		require.NoError(t, err)
		for _, ev := range evs {
			if ev.Type == rbtype.EventEscalationSucceeded {
				succeeded++
				if strings.Contains(string(ev.Data), `"receipt":true`) {
					fromReceipt++
				}
			}
		}
		return succeeded, fromReceipt
	}
	waitUntil(t, "the first escalation", func() (bool, error) { n, _ := escalations(); return n == 1, nil })
	v := waitFinished(t, d, id)
	require.Equal(t, rbtype.RunbookEscalated, v.Status)
	require.Len(t, sink.keys("/page"), 1)

	_, err = cl.Retry(ctx, id, apitype.RetryRequest{})
	require.NoError(t, err)
	waitUntil(t, "the second escalation", func() (bool, error) { n, _ := escalations(); return n == 2, nil })
	keys := sink.keys("/page")
	require.Len(t, keys, 1, "paged once for its key: %v", keys)
	require.NotEmpty(t, keys[0])
	_, fromReceipt := escalations()
	require.Equal(t, 1, fromReceipt, "the second escalation took the first page's receipt")
}

// TestTwinsAttachToOneWait: two runbooks with the same global-key durable
// step (one case per customer). The second does not start the work again
// while the first's wait is open: it attaches to it. The provider sees one
// start, and one notification completes both with its result. A third,
// submitted after the first completed, takes the receipt.
func TestTwinsAttachToOneWait(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	sink := newSendSink(t, `{"accepted": true}`)
	d := e.start(t, "--verbs", e.file(t, "verbs/t.yaml", fmt.Sprintf(`
- name: open-case
  domain: kyc
  execution:
    kind: durable
    handler: http.start
    side_effects: human_process
    idempotency: {scope: global, key_fields: [customer]}
    params: {url: "%s/cases"}
    timeouts: {park_timeout: PT1H}
  input_schema:
    properties:
      customer: {type: string}
`, sink.URL)))
	cl := d.client("")
	ctx := context.Background()
	submit := func(name string) (string, *apitype.RunbookView) {
		sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: `(kyc.open-case :customer "c-42" :as @case)`, Name: name, IdempotencyKey: name})
		require.NoError(t, err)
		require.True(t, sub.Created)
		return sub.ID.String(), waitStopped(t, d, sub.ID.String())
	}
	first, v := submit("first")
	require.Equal(t, rbtype.StateParked, v.State)
	require.Len(t, sink.keys("/cases"), 1)
	key := v.BlockedOn[0].CorrelationKey

	second, v := submit("second")
	require.Equal(t, rbtype.StepParked, v.Steps[0].Status, "the twin waits")
	require.Len(t, sink.keys("/cases"), 1, "the provider saw one start")

	_, err := cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: rbtype.OutcomeCompleted, Result: []byte(`{"case_id": "k-1"}`)})
	require.NoError(t, err)
	for _, id := range []string{first, second} {
		v := waitFinished(t, d, id)
		require.Equal(t, rbtype.RunbookComplete, v.Status, id)
		require.JSONEq(t, `{"case_id": "k-1"}`, string(v.Outcomes["case"]), "both complete from the one notification")
	}
	evs, err := cl.Events(ctx, second, 0)
	require.NoError(t, err)
	var parks []string
	for _, ev := range evs {
		if ev.Type == rbtype.EventStepParked {
			parks = append(parks, string(ev.Data))
		}
	}
	require.Len(t, parks, 1)
	require.Contains(t, strings.ReplaceAll(parks[0], " ", ""), `"attached_to":"`+first+`"`, "the twin's park names the wait it attached to")

	third, v := submit("third")
	require.Equal(t, rbtype.RunbookComplete, v.Status, "the receipt answers at once")
	require.JSONEq(t, `{"case_id": "k-1"}`, string(v.Outcomes["case"]), third)
	require.Len(t, sink.keys("/cases"), 1, "and the provider still saw one start")

	// Two steps of one runbook under one key, ready in the same round: the
	// second attaches to the wait the first starts in that round.
	sub, err := cl.Submit(ctx, apitype.SubmitRequest{Source: `(kyc.open-case :customer "c-9" :as @a)
(kyc.open-case :customer "c-9" :as @b)`})
	require.NoError(t, err)
	v = waitStopped(t, d, sub.ID.String())
	require.Len(t, sink.keys("/cases"), 2, "one start for c-9")
	var waits []string
	for _, b := range v.BlockedOn {
		if b.Message == "" {
			waits = append(waits, b.CorrelationKey)
		}
	}
	require.Len(t, waits, 1, "one wait of its own, one attached: %+v", v.BlockedOn)
	_, err = cl.Notify(ctx, apitype.NotificationRequest{CorrelationKey: waits[0], Status: rbtype.OutcomeCompleted, Result: []byte(`{"case_id": "k-9"}`)})
	require.NoError(t, err)
	v = waitFinished(t, d, sub.ID.String())
	require.Equal(t, rbtype.RunbookComplete, v.Status)
	require.JSONEq(t, `{"case_id": "k-9"}`, string(v.Outcomes["a"]))
	require.JSONEq(t, `{"case_id": "k-9"}`, string(v.Outcomes["b"]))
	require.Len(t, sink.keys("/cases"), 2)
}
