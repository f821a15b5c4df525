package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

// TestApproversGroupDecidesTheGate: a step that names :approvers
// (docs/design/language.md v1.4) is decided only by a token of that group
// (groups= on its line, shown by whoami) or an admin; any other token
// with approve is refused 403, naming the group, and changes nothing.
func TestApproversGroupDecidesTheGate(t *testing.T) {
	b := setupPolicy(t, "")
	me, err := b.as("tok-carol").Whoami(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"compliance", "dpo"}, me.Groups)
	me, err = b.as("tok-alice").Whoami(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{}, me.Groups)

	src := "(p.wipe :what \"x\" :gate \"human_confirm\" :approvers \"compliance\" :as @s)\n"
	sub := submit(t, b.as("tok-admin"), b.ctx, src)
	id := sub.ID.String()
	b.wait(t, "tok-admin", id, "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	for _, decide := range []func() error{
		func() error {
			_, err := b.as("tok-alice").Approve(b.ctx, id, "s", apitype.DecisionRequest{})
			return err
		},
		func() error {
			_, err := b.as("tok-alice").Reject(b.ctx, id, "s", apitype.DecisionRequest{})
			return err
		},
	} {
		requireAPIError(t, decide(), http.StatusForbidden, httpapi.CodeForbidden,
			`step "s" is decided only by a token of group "compliance" (a token line's groups=compliance) or an admin; this token has no groups`)
	}
	v, err := b.as("tok-admin").Get(b.ctx, id)
	require.NoError(t, err)
	require.Equal(t, rbtype.StepWaitingApproval, v.Steps[0].Status, "the refused decision changed nothing")
	_, err = b.as("tok-carol").Approve(b.ctx, id, "s", apitype.DecisionRequest{})
	require.NoError(t, err, "a token of the group decides")
	b.wait(t, "tok-admin", id, "complete", func(v *apitype.RunbookView) bool { return v.Status == rbtype.RunbookComplete })

	// An admin always may.
	sub = submit(t, b.as("tok-admin"), b.ctx, "(p.wipe :what \"y\" :gate \"human_confirm\" :approvers \"compliance\" :as @s)\n")
	b.wait(t, "tok-admin", sub.ID.String(), "awaiting approval", func(v *apitype.RunbookView) bool { return v.State == rbtype.StateAwaitingApproval })
	_, err = b.as("tok-admin").Approve(b.ctx, sub.ID.String(), "s", apitype.DecisionRequest{})
	require.NoError(t, err)
}

// TestTokenGroupsAreChecked: a malformed groups= stops rbd at start.
func TestTokenGroupsAreChecked(t *testing.T) {
	ps, _, err := httpapi.ParseTokens([]string{"tok groups=compliance,dpo,compliance"})
	require.NoError(t, err)
	require.Equal(t, []string{"compliance", "dpo"}, ps[0].Groups)
	_, _, err = httpapi.ParseTokens([]string{"tok groups=ok,-bad"})
	require.ErrorContains(t, err, `token 1: group "-bad" must be`)
	_, _, err = httpapi.ParseTokens([]string{"tok groups="})
	require.ErrorContains(t, err, "not name=value")
}
