package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

// offeredTo is what a view offers: the steps of its next actions of a
// kind, and of its unavailable ones with their reasons.
func offeredTo(next, unavailable []apitype.ActionView, kind string) (steps []string, refused map[string]string) {
	refused = map[string]string{}
	for _, a := range next {
		if a.Kind == kind {
			steps = append(steps, a.Step)
		}
	}
	for _, a := range unavailable {
		if a.Kind == kind {
			refused[a.Step] = a.Reason
		}
	}
	return steps, refused
}

// TestNextActionsAreTheAskingTokens: a view's next_actions offer an
// approve only to a token whose approve is accepted (docs/reference/http-api.md,
// next_actions); a gate of a group the token is not of, a step above its
// max_risk, or a token without the approve role gets it in
// unavailable_actions with the reason the approve would be refused with.
// The listing says the same, and so does the MCP next_actions tool, whose
// approve tool calls, taken, are accepted.
func TestNextActionsAreTheAskingTokens(t *testing.T) {
	b := setupPolicy(t, "")
	src := "(p.wipe :what \"x\" :gate \"human_confirm\" :approvers \"compliance\" :as @s)\n(p.wire :what \"y\" :as @w)\n"
	sub := submit(t, b.as("tok-admin"), b.ctx, src)
	id := sub.ID.String()
	b.wait(t, "tok-admin", id, "at both gates", func(v *apitype.RunbookView) bool {
		return v.State == rbtype.StateAwaitingApproval && len(v.BlockedOn) == 2
	})
	const group = `step "s" is decided only by a token of group "compliance" (a token line's groups=compliance) or an admin; this token has no groups`
	const risk = `step "w" calls verb p.wire of risk high; its gate is decided only by a token with max_risk=high (or admin), and this one's is medium`
	const noRole = "this token (actor reader) lacks the approve role that POST /v1/runbooks/{id}/steps/{key}/approve needs"
	for _, c := range []struct {
		token   string
		offered []string
		refused map[string]string
	}{
		{"tok-admin", []string{"s", "w"}, map[string]string{}},
		{"tok-carol", []string{"s", "w"}, map[string]string{}},
		{"tok-alice", []string{"w"}, map[string]string{"s": group}},
		{"tok-medium", nil, map[string]string{"s": group, "w": risk}},
		{"tok-reader", nil, map[string]string{"s": noRole, "w": noRole}},
	} {
		v, err := b.as(c.token).Get(b.ctx, id)
		require.NoError(t, err)
		offered, refused := offeredTo(v.NextActions, v.UnavailableActions, apitype.ActionApprove)
		require.Equal(t, c.offered, offered, "%s is offered", c.token)
		require.Equal(t, c.refused, refused, "%s is told why not", c.token)

		yes := true
		list, err := b.as(c.token).List(b.ctx, client.ListRequest{NeedsPerson: &yes})
		require.NoError(t, err)
		require.Len(t, list.Runbooks, 1)
		require.True(t, list.Runbooks[0].NeedsPerson, "%s: it waits on a person, whoever", c.token)
		offered, refused = offeredTo(list.Runbooks[0].NextActions, list.Runbooks[0].UnavailableActions, apitype.ActionApprove)
		require.Equal(t, c.offered, offered, "%s is offered in the listing", c.token)
		require.Equal(t, c.refused, refused, "%s is told why not in the listing", c.token)

		// What is withheld is refused as the reason says.
		for step, why := range c.refused {
			_, err := b.as(c.token).Approve(b.ctx, id, step, apitype.DecisionRequest{})
			requireAPIError(t, err, 403, httpapi.CodeForbidden, why)
		}
	}

	// The MCP next_actions tool: the same split, each offered approve a
	// tool call; alice's call of it is accepted.
	api := httpapi.New(httpapi.Config{Engine: b.engine, Catalogue: b.cat, Tokens: policyTokens, MCPApprovals: true})
	var next apitype.MCPNextActions
	res := callTool(t, inMemory(t, api, "tok-alice"), "next_actions", map[string]any{"id": id}, &next)
	require.False(t, res.IsError, toolText(res))
	require.Len(t, next.NextActions, 1)
	require.Equal(t, "w", next.NextActions[0].Step)
	require.Equal(t, &apitype.ToolCall{Name: "approve", Arguments: map[string]any{"id": id, "step": "w"}}, next.NextActions[0].Tool)
	require.Len(t, next.UnavailableActions, 1)
	require.Equal(t, group, next.UnavailableActions[0].Reason)
	res = callTool(t, inMemory(t, api, "tok-alice"), next.NextActions[0].Tool.Name, next.NextActions[0].Tool.Arguments, nil)
	require.False(t, res.IsError, toolText(res))

	// Carol, of the group, is offered the revocation and takes it.
	res = callTool(t, inMemory(t, api, "tok-carol"), "next_actions", map[string]any{"id": id}, &next)
	require.False(t, res.IsError, toolText(res))
	require.Len(t, next.NextActions, 1)
	require.Equal(t, "s", next.NextActions[0].Step)
	require.Empty(t, next.UnavailableActions)
	res = callTool(t, inMemory(t, api, "tok-carol"), next.NextActions[0].Tool.Name, next.NextActions[0].Tool.Arguments, nil)
	require.False(t, res.IsError, toolText(res))
	b.wait(t, "tok-admin", id, "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })
}
