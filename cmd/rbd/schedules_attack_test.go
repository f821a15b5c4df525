package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scheduleVerbs: an echo anyone may use, and a riskier verb only some
// tokens may.
const scheduleVerbs = e2eVerbs + `
- name: wire
  domain: t
  execution: {kind: sync, handler: core.echo, side_effects: none}
  input_schema:
    properties:
      v: {type: string}
`

// scheduleTokens: ann makes schedules and may use every verb; bob, of the
// same tenant, may only echo; root is acme's admin.
const scheduleTokens = `tok-ann tenant=acme actor=ann roles=read,submit
tok-bob tenant=acme actor=bob roles=read,submit verbs=t.echo
tok-root tenant=acme actor=root roles=admin
`

// scheduleAnswer is what a client reads of a schedule.
type scheduleAnswer struct {
	ID          string `json:"id"`
	Actor       string `json:"actor"`
	LastError   string `json:"last_error"`
	LastRunbook *struct {
		ID string `json:"id"`
	} `json:"last_runbook"`
}

// scheduleCall makes a raw schedule request with token and decodes a
// schedule from a 2xx answer.
func scheduleCall(t *testing.T, d *daemon, token, method, path, body string) (int, scheduleAnswer, string) {
	t.Helper()
	status, out := send(t, method, d.server+path, body, "Authorization", "Bearer "+token, "Content-Type", "application/json")
	var s scheduleAnswer
	if status < 300 {
		require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	}
	return status, s, out
}

// Under attack (docs/reliability.md), round 4, row 4: any submit token of a tenant could PATCH another
// token's schedule to run anything; ticks kept the maker's scope and
// actor, so a token limited to t.echo ran t.wire recorded as ann, and it
// went on after ann's token was revoked. Now only the token that made a
// schedule, or an admin, changes or deletes it; each tick runs under
// what that token may do at the time, and records its actor; a token
// taken out of the file makes its schedules tick no more. The finding is
// one of authorization, not of load: its attack is one PATCH, so no
// prober measures other tenants' answers or the daemon's memory under it
// (docs/reliability.md).
func TestSchedulesActOnlyForTheTokenThatMadeThem(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "RBD_MIN_SCHEDULE_INTERVAL=1s")
	verbs := e.file(t, "verbs/t.yaml", scheduleVerbs)
	tokens := e.file(t, "tokens", scheduleTokens)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)

	status, made, out := scheduleCall(t, d, "tok-ann", "POST", "/v1/schedules",
		`{"name":"often","cron":"@every 1s","source":"(t.echo :v \"tick\")","overlap":"allow","catch_up":"latest"}`)
	require.Equal(t, http.StatusCreated, status, out)

	// Bob may not change or delete ann's schedule.
	status, _, out = scheduleCall(t, d, "tok-bob", "PATCH", "/v1/schedules/"+made.ID, `{"source":"(t.wire :v \"by bob\")"}`)
	require.Equal(t, http.StatusForbidden, status, "bob changed ann's schedule: %s", out)
	status, _, out = scheduleCall(t, d, "tok-bob", "DELETE", "/v1/schedules/"+made.ID, "")
	require.Equal(t, http.StatusForbidden, status, "bob deleted ann's schedule: %s", out)
	// Ann and the admin may.
	status, _, out = scheduleCall(t, d, "tok-ann", "PATCH", "/v1/schedules/"+made.ID, `{"inputs":{}}`)
	require.Equal(t, http.StatusOK, status, out)
	status, _, out = scheduleCall(t, d, "tok-root", "PATCH", "/v1/schedules/"+made.ID, `{"paused":false}`)
	require.Equal(t, http.StatusOK, status, out)

	// A tick's runbook is ann's, and says so in its ledger.
	var fired scheduleAnswer
	waitUntil(t, "a tick to make a runbook", func() (bool, error) {
		_, fired, _ = scheduleCall(t, d, "tok-ann", "GET", "/v1/schedules/"+made.ID, "")
		return fired.LastRunbook != nil, nil
	})
	_, events := send(t, "GET", d.server+"/v1/runbooks/"+fired.LastRunbook.ID+"/events", "", "Authorization", "Bearer tok-ann")
	require.Contains(t, events, `"actor":"ann"`)
	require.Regexp(t, `"SCHEDULE_FIRED"`, events)

	// Ann's token is revoked: the file without it, the daemon restarted.
	d.stop(15)
	e.file(t, "tokens", strings.Replace(scheduleTokens, "tok-ann tenant=acme actor=ann roles=read,submit\n", "", 1))
	d = e.start(t, "--verbs", verbs, "--api-token-file", tokens)
	var after scheduleAnswer
	waitUntil(t, "a tick to be refused", func() (bool, error) {
		_, after, _ = scheduleCall(t, d, "tok-root", "GET", "/v1/schedules/"+made.ID, "")
		return after.LastError != "", nil
	})
	require.Contains(t, after.LastError, "no longer accepted")
	last := after.LastRunbook.ID
	time.Sleep(2500 * time.Millisecond)
	_, after, _ = scheduleCall(t, d, "tok-root", "GET", "/v1/schedules/"+made.ID, "")
	require.Equal(t, last, after.LastRunbook.ID, "a revoked token's schedule still makes runbooks")
}

// Under attack (docs/reliability.md), round 4, rows 11 and 12: a schedule's creation skipped the
// submission's admission (scope, policy, size), so every tick then failed
// and logged a WARN; and there was no quota nor minimum interval (@every
// 0s was accepted). A schedule is now admitted as its maker's submission
// would be, a tenant has at most --max-schedules-per-tenant of them, and
// ticks are at least --min-schedule-interval apart.
func TestSchedulesAreAdmittedAndBounded(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	e.env = append(e.env, "RBD_MAX_SCHEDULES_PER_TENANT=3")
	verbs := e.file(t, "verbs/t.yaml", scheduleVerbs)
	tokens := e.file(t, "tokens", scheduleTokens)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)

	status, _, out := scheduleCall(t, d, "tok-bob", "POST", "/v1/schedules", `{"name":"wired","cron":"@hourly","source":"(t.wire :v \"x\")"}`)
	require.Equal(t, http.StatusForbidden, status, "a schedule of a verb out of the token's scope: %s", out)
	big, _ := json.Marshal(map[string]string{"name": "big", "cron": "@hourly", "source": echoes(600, strings.Repeat("v", 500))})
	status, _, out = scheduleCall(t, d, "tok-ann", "POST", "/v1/schedules", string(big))
	require.Equal(t, http.StatusRequestEntityTooLarge, status, "a schedule over --max-source-bytes: %.300s", out)
	status, _, out = scheduleCall(t, d, "tok-ann", "POST", "/v1/schedules", `{"name":"hot","cron":"@every 0s","source":"(t.echo :v \"x\")"}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "@every 0s: %s", out)
	require.Contains(t, out, `"min-schedule-interval"`)
	for i := 0; i < 3; i++ {
		status, _, out = scheduleCall(t, d, "tok-ann", "POST", "/v1/schedules", fmt.Sprintf(`{"name":"s%d","cron":"@hourly","source":"(t.echo :v \"x\")"}`, i))
		require.Equal(t, http.StatusCreated, status, out)
	}
	status, _, out = scheduleCall(t, d, "tok-bob", "POST", "/v1/schedules", `{"name":"s4","cron":"@hourly","source":"(t.echo :v \"x\")"}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, "a 4th schedule past the tenant's 3: %s", out)
	require.Contains(t, out, `"max-schedules-per-tenant"`)
}
