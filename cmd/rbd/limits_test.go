package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/httpapi"
)

// echoes is a source of n independent echo steps.
func echoes(n int, value string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "(t.echo :v %q :as @e%d)\n", value, i)
	}
	return b.String()
}

// errorAnswer is an error body as a client reads it.
type errorAnswer struct {
	Code             string            `json:"code"`
	Message          string            `json:"message"`
	Diagnostics      []json.RawMessage `json:"diagnostics"`
	DiagnosticsTotal int               `json:"diagnostics_total"`
	Limit            *limitAnswer      `json:"limit"`
}

type limitAnswer struct {
	Name string `json:"name"`
	Max  int    `json:"max"`
	Got  int    `json:"got"`
}

// pagedView is what a client reads of a view's steps.
type pagedView struct {
	Steps []struct {
		Key string `json:"key"`
	} `json:"steps"`
	StepsTotal int                        `json:"steps_total"`
	StepsNext  *string                    `json:"steps_next"`
	Outcomes   map[string]json.RawMessage `json:"outcomes"`
}

// submitRaw submits source with the token and returns the status and the
// decoded error, if any.
func submitRaw(t *testing.T, d *daemon, token string, req apitype.SubmitRequest) (int, errorAnswer, string) {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	status, out := send(t, "POST", d.server+"/v1/runbooks", string(body), "Authorization", "Bearer "+token)
	var eb struct {
		Error errorAnswer `json:"error"`
	}
	if status >= 400 {
		require.NoError(t, json.Unmarshal([]byte(out), &eb), out)
	}
	return status, eb.Error, out
}

// Under attack (docs/reliability.md), row 3, with the daemon's defaults: a runbook of more steps
// than --max-steps (10,000), a source over --max-source-bytes (256 KiB)
// and a source of thousands of errors are refused with a clear answer
// that names the limit, and the errors' answer carries the first 100
// diagnostics and their count; a runbook of 1,500 steps is shown a page
// of 1,000 steps at a time.
func TestRunbookSizeIsBoundedByDefault(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "tok\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)

	status, info, out := submitRaw(t, d, "tok", apitype.SubmitRequest{Source: strings.Repeat("(t.echo :v \"x\")\n", 12_000)})
	require.Equal(t, http.StatusUnprocessableEntity, status, out)
	require.Equal(t, "LIMIT_EXCEEDED", info.Code)
	require.Equal(t, &limitAnswer{Name: "max-steps", Max: 10_000, Got: 12_000}, info.Limit)
	require.Contains(t, info.Message, "--max-steps")

	padded := strings.Repeat("; "+strings.Repeat("p", 98)+"\n", 3000) + `(t.echo :v "x")`
	status, info, out = submitRaw(t, d, "tok", apitype.SubmitRequest{Source: padded})
	require.Equal(t, http.StatusRequestEntityTooLarge, status, out)
	require.Equal(t, "LIMIT_EXCEEDED", info.Code)
	require.Equal(t, "max-source-bytes", info.Limit.Name)

	var unknown strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&unknown, "(t.nope%d)\n", i)
	}
	status, info, out = submitRaw(t, d, "tok", apitype.SubmitRequest{Source: unknown.String()})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, httpapi.CodeCompileFailed, info.Code)
	require.Len(t, info.Diagnostics, 100)
	require.Equal(t, 2000, info.DiagnosticsTotal)
	require.Less(t, len(out), 100_000, "the answer stays small")

	status, _, out = submitRaw(t, d, "tok", apitype.SubmitRequest{Source: echoes(1500, "y")})
	require.Equal(t, http.StatusCreated, status, out)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(out), &sub))
	page := func(query string) pagedView {
		status, out := send(t, "GET", d.server+"/v1/runbooks/"+sub.ID.String()+query, "", "Authorization", "Bearer tok")
		require.Equal(t, http.StatusOK, status, out)
		var v pagedView
		require.NoError(t, json.Unmarshal([]byte(out), &v))
		return v
	}
	first := page("")
	require.Len(t, first.Steps, 1000)
	require.Equal(t, 1500, first.StepsTotal)
	require.NotNil(t, first.StepsNext)
	require.Equal(t, "e0", first.Steps[0].Key)
	second := page("?steps_after=" + *first.StepsNext)
	require.Len(t, second.Steps, 500)
	require.Nil(t, second.StepsNext)
	require.Equal(t, "e1000", second.Steps[0].Key)
	require.LessOrEqual(t, len(first.Outcomes), 1000, "outcomes are the page's")
	status, _ = send(t, "GET", d.server+"/v1/runbooks/"+sub.ID.String()+"?steps_limit=20000", "", "Authorization", "Bearer tok")
	require.Equal(t, http.StatusBadRequest, status)

	_, metrics := send(t, "GET", d.server+"/metrics", "")
	require.Regexp(t, `(?m)^rbd_http_refusals_total\{reason="limit_steps"\} 1$`, metrics)
	require.Regexp(t, `(?m)^rbd_http_refusals_total\{reason="limit_source_bytes"\} 1$`, metrics)
}

// Under attack (docs/reliability.md), row 3, with the limits turned down: an extension that
// would take a runbook past --max-steps is refused and adds nothing, one
// within it is added; a plan over --max-plan-bytes is refused; and the
// decoded plans a worker keeps never weigh more than --plan-cache-bytes,
// however many distinct plans run.
func TestRunbookGrowthAndThePlanCacheAreBounded(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "tok\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens,
		"--max-steps", "50", "--max-plan-bytes", "200000", "--plan-cache-bytes", "1000000")

	status, _, out := submitRaw(t, d, "tok", apitype.SubmitRequest{Source: echoes(40, "x"), HoldOpen: true})
	require.Equal(t, http.StatusCreated, status, out)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(out), &sub))
	extend := func(source string) (int, string) {
		body, err := json.Marshal(apitype.ExtendRequest{Source: source})
		require.NoError(t, err)
		return send(t, "POST", d.server+"/v1/runbooks/"+sub.ID.String()+"/steps", string(body), "Authorization", "Bearer tok")
	}
	more := strings.ReplaceAll(echoes(20, "z"), "@e", "@more")
	status, out = extend(more)
	require.Equal(t, http.StatusUnprocessableEntity, status, out)
	require.Contains(t, out, `"limit":{"name":"max-steps","max":50,"got":60}`)
	status, out = extend(strings.ReplaceAll(echoes(5, "z"), "@e", "@few"))
	require.Equal(t, http.StatusOK, status, out)

	status, info, out := submitRaw(t, d, "tok", apitype.SubmitRequest{Source: echoes(45, strings.Repeat("w", 5000))})
	require.Equal(t, http.StatusRequestEntityTooLarge, status, out)
	require.Equal(t, "max-plan-bytes", info.Limit.Name)
	require.Greater(t, info.Limit.Got, 200000)

	for i := 0; i < 30; i++ {
		status, _, out := submitRaw(t, d, "tok", apitype.SubmitRequest{Source: echoes(45, fmt.Sprintf("distinct-%d-%s", i, strings.Repeat("d", 200)))})
		require.Equal(t, http.StatusCreated, status, out)
	}
	var weight int
	waitUntil(t, "the plans to be decoded", func() (bool, error) {
		_, metrics := send(t, "GET", d.server+"/metrics", "")
		m := regexp.MustCompile(`(?m)^rbd_plan_cache_plans (\d+)$`).FindStringSubmatch(metrics)
		if m == nil {
			return false, nil
		}
		w := regexp.MustCompile(`(?m)^rbd_plan_cache_bytes (\d+(\.\d+)?(e\+\d+)?)$`).FindStringSubmatch(metrics)
		f, err := strconv.ParseFloat(w[1], 64)
		weight = int(f)
		n, _ := strconv.Atoi(m[1])
		return err == nil && n > 3, err
	})
	require.LessOrEqual(t, weight, 1_000_000)
}

// Under attack (docs/reliability.md), row 5: a read-only token may hold --max-streams-per-token
// (16) live event streams at once; the next is 429 naming the limit,
// while another token still gets its stream, and a stream closed gives
// its place back.
func TestLiveStreamsAreBoundedPerToken(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "tok\ntok-reader tenant=default actor=rita roles=read\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)
	status, _, out := submitRaw(t, d, "tok", apitype.SubmitRequest{Source: "(t.wait :as @w)"})
	require.Equal(t, http.StatusCreated, status, out)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(out), &sub))
	open := func(token string) (*http.Response, string) {
		req, err := http.NewRequest("GET", d.server+"/v1/runbooks/"+sub.ID.String()+"/events", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, string(b)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp, ""
	}
	var streams []*http.Response
	for i := 0; i < 16; i++ {
		resp, body := open("tok-reader")
		require.Equal(t, http.StatusOK, resp.StatusCode, "stream %d: %s", i+1, body)
		streams = append(streams, resp)
	}
	resp, body := open("tok-reader")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	require.Contains(t, body, `"code":"LIMIT_EXCEEDED"`)
	require.Contains(t, body, `"name":"max-streams-per-token"`)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	other, body := open("tok")
	require.Equal(t, http.StatusOK, other.StatusCode, body)
	streams[0].Body.Close()
	waitUntil(t, "the closed stream's place to be given back", func() (bool, error) {
		resp, _ := open("tok-reader")
		return resp.StatusCode == http.StatusOK, nil
	})
}

// Under attack (docs/reliability.md), row 3, growth with the daemon's defaults: an extension
// that would take a runbook past --max-steps (10,000) is refused naming
// the limit, and adds no step.
func TestRunbookGrowthIsBoundedByDefault(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", "tok\n")
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)

	status, _, out := submitRaw(t, d, "tok", apitype.SubmitRequest{Source: "(t.wait :as @w)", HoldOpen: true})
	require.Equal(t, http.StatusCreated, status, out)
	var sub apitype.SubmitResponse
	require.NoError(t, json.Unmarshal([]byte(out), &sub))
	body, err := json.Marshal(apitype.ExtendRequest{Source: strings.Repeat("(t.echo :v \"z\")\n", 10_000)})
	require.NoError(t, err)
	status, out = send(t, "POST", d.server+"/v1/runbooks/"+sub.ID.String()+"/steps", string(body), "Authorization", "Bearer tok")
	require.Equal(t, http.StatusUnprocessableEntity, status, out)
	require.Contains(t, out, `"limit":{"name":"max-steps","max":10000,"got":10001}`)
	status, out = send(t, "GET", d.server+"/v1/runbooks/"+sub.ID.String(), "", "Authorization", "Bearer tok")
	require.Equal(t, http.StatusOK, status, out)
	var v pagedView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Len(t, v.Steps, 1, "the refused extension added steps")
}
