package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/httpapi"
)

// Bad input to POST /v1/schedules (docs/design/semantics.md section 14):
// 400 naming the field, 422 with the compiler's diagnostics for a source
// that does not compile, and nothing stored.
func TestScheduleBadInputNamesTheField(t *testing.T) {
	b := setup(t)
	for _, tt := range []struct {
		body   string
		status int
		code   string
		field  string
	}{
		{`{"name":"n","cron":"61 * * * *","source":"(t.echo :v \"x\")"}`, 400, httpapi.CodeInvalidRequest, "cron"},
		{`{"name":"n","cron":"every day","source":"(t.echo :v \"x\")"}`, 400, httpapi.CodeInvalidRequest, "cron"},
		{`{"name":"n","cron":"@daily","timezone":"Europe/Lundun","source":"(t.echo :v \"x\")"}`, 400, httpapi.CodeInvalidRequest, "timezone"},
		{`{"name":"n","cron":"@daily","catch_up":"all","source":"(t.echo :v \"x\")"}`, 400, httpapi.CodeInvalidRequest, "catch_up"},
		{`{"name":"n","cron":"@daily","overlap":"queue","source":"(t.echo :v \"x\")"}`, 400, httpapi.CodeInvalidRequest, "overlap"},
		{`{"name":"n","cron":"@daily","mode":"yolo","source":"(t.echo :v \"x\")"}`, 400, httpapi.CodeInvalidRequest, "mode"},
		{`{"name":"n","cron":"@daily"}`, 400, httpapi.CodeInvalidRequest, "source"},
		{`{"name":"n","cron":"@daily","source":"(t.echo :v $who)","inputs":{"who":5}}`, 400, httpapi.CodeInvalidRequest, "inputs"},
		{`{"name":"n","cron":"@daily","source":"(t.echo :v 1"}`, 422, httpapi.CodeCompileFailed, "source"},
		{`{"name":"n","cron":"@daily","source":"(t.echo :v 1)","cronn":"x"}`, 400, httpapi.CodeMalformedJSON, ""},
	} {
		status, body := b.raw(t, http.MethodPost, "/v1/schedules", tt.body)
		require.Equal(t, tt.status, status, "%s: %s", tt.body, body)
		var eb apitype.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(body), &eb))
		require.Equal(t, tt.code, eb.Error.Code, tt.body)
		require.Equal(t, tt.field, eb.Error.Field, tt.body)
		if tt.status == 422 {
			require.NotEmpty(t, eb.Error.Diagnostics, "the compiler's diagnostics")
		}
	}
	list, err := b.client.Schedules(b.ctx)
	require.NoError(t, err)
	require.Empty(t, list.Schedules, "nothing was stored")

	// A good one, then the calls on it; another tenant sees none of it.
	v, err := b.client.CreateSchedule(b.ctx, apitype.ScheduleRequest{Name: "nightly", Cron: "30 1 * * *", Timezone: "Europe/London",
		Source: `(t.echo :v $who)`, Inputs: map[string]any{"who": "ada"}})
	require.NoError(t, err)
	require.NotNil(t, v.NextFireAt)
	paused := true
	v, err = b.client.PatchSchedule(b.ctx, v.ID.String(), apitype.SchedulePatchRequest{Paused: &paused})
	require.NoError(t, err)
	require.True(t, v.Paused)
	require.Nil(t, v.NextFireAt)
	status, body := b.raw(t, http.MethodPatch, "/v1/schedules/"+v.ID.String(), `{"catch_up":"sometimes"}`)
	require.Equal(t, 400, status, body)
	require.Contains(t, body, `"field":"catch_up"`)
	status, _ = b.raw(t, http.MethodGet, "/v1/schedules/not-an-id", "")
	require.Equal(t, 400, status)

	other := &client.Client{BaseURL: b.srv.URL, Token: "tok-acme"}
	_, err = other.PatchSchedule(b.ctx, v.ID.String(), apitype.SchedulePatchRequest{Paused: &paused})
	require.ErrorIs(t, err, client.CodeNotFound)
	theirs, err := other.Schedules(b.ctx)
	require.NoError(t, err)
	require.Empty(t, theirs.Schedules)

	_, err = b.client.DeleteSchedule(b.ctx, v.ID.String())
	require.NoError(t, err)
	_, err = b.client.DeleteSchedule(b.ctx, v.ID.String())
	require.ErrorIs(t, err, client.CodeNotFound)
}
