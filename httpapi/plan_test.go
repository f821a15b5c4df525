package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
)

// TestPlanEndpoint checks GET /v1/runbooks/{id}/plan: the frozen plan
// with its edges and their kinds, behind the token like the rest.
func TestPlanEndpoint(t *testing.T) {
	b := setup(t)
	src := "(t.echo :v \"a\" :as @a)\n(t.echo :v @a.v :as @b)\n(t.wait :after @b :as @w)\n"
	sub, err := b.client.Submit(b.ctx, apitype.SubmitRequest{Source: src})
	require.NoError(t, err)
	id := sub.ID.String()

	status, body := b.raw(t, "GET", "/v1/runbooks/"+id+"/plan", "")
	require.Equal(t, http.StatusOK, status, body)
	var plan compiler.Plan
	require.NoError(t, json.Unmarshal([]byte(body), &plan))
	require.Len(t, plan.Steps, 3)
	require.ElementsMatch(t, []compiler.Edge{
		{From: "a", To: "b", Kind: compiler.EdgeData},
		{From: "b", To: "w", Kind: compiler.EdgeSequence},
	}, plan.Edges)
	require.Equal(t, "await.notification", plan.Steps[2].Execution.Handler)

	status, _ = b.raw(t, "GET", "/v1/runbooks/"+id+"/plan", "", "Authorization", "Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = b.raw(t, "GET", "/v1/runbooks/5c1e0000-0000-4000-8000-000000000000/plan", "")
	require.Equal(t, http.StatusNotFound, status)

	// The parked step says since when it waits and when it gives up.
	v := b.waitFor(t, id, "parked", stateIs(string(rbtype.StateParked)))
	w := stepOf(t, v, "w")
	require.NotNil(t, w.ParkedAt)
	require.NotNil(t, w.TimeoutAt)
	require.WithinDuration(t, w.ParkedAt.Add(time.Hour), *w.TimeoutAt, time.Minute, "park_timeout is PT1H")
}

func stepOf(t *testing.T, v *apitype.RunbookView, key string) apitype.StepView {
	t.Helper()
	for _, s := range v.Steps {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("no step %s", key)
	return apitype.StepView{}
}
