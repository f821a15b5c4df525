package registry

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

func diagLines(ds lang.Diagnostics) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		r := d.Range
		out[i] = fmt.Sprintf("%d:%d %s %s", r.Start.Line, r.Start.Column, d.Code, d.Text())
	}
	return out
}

func catalogue(t *testing.T, src string) (*Catalogue, lang.Diagnostics) {
	t.Helper()
	defs, diags := verbs.Parse("v.yaml", []byte(src))
	require.Empty(t, diags)
	cat, diags := New(defs, NewHandlers())
	return cat, diags.Sorted()
}

func TestHandlerChecks(t *testing.T) {
	_, diags := catalogue(t, `
- name: a
  domain: d
  execution: {kind: sync, handler: core.ecko, side_effects: none}
- name: b
  domain: d
  execution: {kind: sync, handler: http.start, side_effects: external_call, params: {url: "http://x"}}
- name: c
  domain: d
  execution: {kind: sync, handler: http.call, side_effects: external_call, params: {method: FETCH, timeout: 3}}
- name: e
  domain: d
  execution: {kind: sync, handler: pg.crud, side_effects: internal_db, params: {op: update, table: "Users; drop"}}
- name: f
  domain: d
  execution: {kind: durable, handler: timer.sleep, side_effects: none, params: {duration: soon}, timeouts: {park_timeout: P1D}}
`)
	require.Equal(t, []string{
		`4:36 V011 handler "core.ecko" is not registered (did you mean "core.echo"?)`,
		`7:36 V004 sync verb "d.b" names handler "http.start", which is durable; make the verb durable or pick a sync handler`,
		// Each param's problem at the param: a missing one at params, a
		// bad value at the value, an unknown param at its key.
		`10:84 V004 bad params for handler "http.call": param "url" is required`,
		`10:93 V004 bad params for handler "http.call": param "method" "FETCH" must be one of GET, POST, PUT, PATCH, DELETE`,
		`10:100 V004 bad params for handler "http.call": unknown param "timeout" (valid: url, method, headers, dry_run, dry_run_url, redirects)`,
		`13:85 V004 bad params for handler "pg.crud": op "update" needs param "key": the columns that select the row`,
		`13:100 V004 bad params for handler "pg.crud": table "Users; drop" is not a lower-case SQL identifier, optionally schema-qualified`,
		`16:91 V004 bad params for handler "timer.sleep": param "duration": "soon" is not an ISO 8601 duration (examples: PT30S, PT5M, P14D)`,
	}, diagLines(diags))
}

func TestCompensationChecks(t *testing.T) {
	_, diags := catalogue(t, `
- name: undo
  domain: d
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    required: [id, reason]
    properties:
      id: {type: uuid}
      reason: {type: string}
- name: wait
  domain: d
  execution: {kind: durable, handler: await.notification, side_effects: none, timeouts: {park_timeout: PT1H}}
- name: do
  domain: d
  execution:
    kind: sync
    handler: core.echo
    side_effects: internal_db
    compensation: {verb: d.undo, args: {id: "@result.idd", reason: 5, colour: red}}
  input_schema:
    properties:
      key: {type: string}
  output_schema:
    properties:
      id: {type: uuid}
- name: other
  domain: d
  execution:
    kind: sync
    handler: core.echo
    side_effects: none
    compensation: {verb: d.wait, args: {x: "@args.nope"}}
  input_schema:
    properties:
      key: {type: string}
- name: third
  domain: d
  execution:
    kind: sync
    handler: core.echo
    side_effects: none
    compensation: {verb: d.udno}
`)
	require.Equal(t, []string{
		`19:45 V014 compensation arg "id": "@result.idd" names field "idd", which "d.do"'s output_schema does not list`,
		`19:68 V014 compensation arg "reason" does not fit "d.undo": got number, want string`,
		`19:79 V014 compensation verb "d.undo" has no argument "colour" (valid: id, reason)`,
		`32:26 V014 compensation verb "d.wait" is durable; compensations must be sync so a failing runbook can be undone without waiting`,
		`32:44 V014 compensation arg "x": "@args.nope" names field "nope", which "d.other"'s input_schema does not list`,
		`42:26 V014 compensation verb "d.udno" is not defined (did you mean "d.undo" or "d.do"?)`,
	}, diagLines(diags))
}

// An escalation is checked as a compensation is: its verb exists and is
// sync, and its args fit it.
func TestEscalationChecks(t *testing.T) {
	_, diags := catalogue(t, `
- name: page
  domain: ops
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
  input_schema:
    required: [who]
    properties:
      who: {type: string}
- name: wait
  domain: d
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H, on_timeout: escalate, escalation: {verb: ops.pgae}}
- name: wait-too
  domain: d
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H, on_timeout: escalate, escalation: {verb: d.wait, args: {who: 1}}}
- name: wait-ok
  domain: d
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H, on_timeout: escalate, escalation: {verb: ops.page, args: {whom: x}}}
`)
	require.Equal(t, []string{
		`15:77 V014 escalation verb "ops.pgae" is not defined (did you mean "ops.page"?)`,
		`22:77 V014 escalation verb "d.wait" is durable; escalations must be sync so the page goes out as soon as the wait times out`,
		`29:77 V014 escalation verb "ops.page" needs argument "who"`,
		`29:100 V014 escalation verb "ops.page" has no argument "whom" (valid: who) (did you mean "who"?)`,
	}, diagLines(diags))
}

// Execution level full needs a handler that can dry-run (V031).
func TestLevelFullNeedsADryRun(t *testing.T) {
	_, diags := catalogue(t, `
- name: wait
  domain: d
  execution: {kind: durable, handler: await.notification, side_effects: human_process, level: full, timeouts: {park_timeout: PT1H}}
- name: post
  domain: d
  execution: {kind: sync, handler: http.call, params: {url: "https://x.example/p"}, side_effects: external_call, level: full}
`)
	require.Equal(t, []string{
		`4:95 V031 verb "d.wait" is at execution level full, but handler "await.notification" cannot dry-run, so nothing could be verified before the commit; use level guarded, or a handler with a dry run`,
	}, diagLines(diags))
}

func TestCatalogueLookup(t *testing.T) {
	cat, diags := catalogue(t, `
- {name: open-case, domain: kyc, execution: {kind: sync, handler: core.echo, side_effects: none}}
- {name: close-case, domain: kyc, execution: {kind: sync, handler: core.echo, side_effects: none}}
`)
	require.Empty(t, diags)
	require.Equal(t, []string{"kyc.close-case", "kyc.open-case"}, cat.Names())
	d, ok := cat.Lookup("kyc.open-case")
	require.True(t, ok)
	require.Equal(t, "open-case", d.Name)
	_, ok = cat.Lookup("KYC.open-case")
	require.False(t, ok, "names match exactly")
	require.Equal(t, []string{"kyc.open-case", "kyc.close-case"}, cat.Suggest("kyc.opne-case"))
}

func TestRegisterHandler(t *testing.T) {
	h := NewHandlers()
	require.NoError(t, h.Register(HandlerSpec{Name: "acme.crm", Kind: rbtype.KindSync}))
	require.EqualError(t, h.Register(HandlerSpec{Name: "acme.crm", Kind: rbtype.KindSync}), `handler "acme.crm" is already registered`)
	require.EqualError(t, h.Register(HandlerSpec{Name: "core.echo", Kind: rbtype.KindSync}), `handler "core.echo" is already registered`)
	require.EqualError(t, h.Register(HandlerSpec{Name: "x.y", Kind: "async"}), `handler "x.y": kind must be sync or durable, not "async"`)
	spec, ok := h.Lookup("acme.crm")
	require.True(t, ok)
	require.Equal(t, rbtype.KindSync, spec.Kind)
	require.Contains(t, h.Names(), "acme.crm")
}

// http.start takes http.call's params and an optional cancel_url, which
// must be an absolute http or https URL.
func TestStartCancelURL(t *testing.T) {
	_, diags := catalogue(t, `
- name: ok
  domain: d
  execution: {kind: durable, handler: http.start, side_effects: external_call, params: {url: "http://x", cancel_url: "https://x/cancel"}, timeouts: {park_timeout: P1D}}
- name: bad
  domain: d
  execution: {kind: durable, handler: http.start, side_effects: external_call, params: {url: "http://x", cancel_url: "/cancel"}, timeouts: {park_timeout: P1D}}
`)
	require.Len(t, diags, 1)
	require.Equal(t, lang.VBadValue, diags[0].Code)
	require.Contains(t, diags[0].Message, `param "cancel_url" /cancel must be an absolute http or https URL`)
}

// An argument may not replace a query parameter that an http verb's URL
// fixes (docs/reliability.md): V004 for a GET or DELETE verb whose input_schema names
// one; a POST sends its arguments in the body, where nothing is fixed.
// params.redirects is none or same_host.
func TestFixedQueryParametersAndRedirects(t *testing.T) {
	_, diags := catalogue(t, `
- name: get
  domain: d
  execution: {kind: sync, handler: http.call, side_effects: none, params: {url: "http://x/s?scope=public&v=2", method: GET}}
  input_schema:
    properties:
      q: {type: string}
      scope: {type: string}
- name: post
  domain: d
  execution: {kind: sync, handler: http.call, side_effects: external_call, params: {url: "http://x/s?scope=public"}}
  input_schema:
    properties:
      scope: {type: string}
- name: hop
  domain: d
  execution: {kind: sync, handler: http.call, side_effects: external_call, params: {url: "http://x/s", redirects: anywhere}}
`)
	lines := diagLines(diags)
	require.Len(t, lines, 2, "%v", lines)
	require.Contains(t, lines[0], `V004 argument "scope" would replace the query parameter "scope" that the URL fixes`)
	require.Contains(t, lines[1], `V004 bad params for handler "http.call": param "redirects" "anywhere" must be none (the default) or same_host`)
}
