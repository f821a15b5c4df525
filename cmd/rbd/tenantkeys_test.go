package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

// tenantTokenFile: a non-admin token of the default tenant, and two
// tenants' tokens.
const tenantTokenFile = `tok-def actor=dora roles=read,submit,approve
tok-acme tenant=acme actor=alice roles=read,submit,approve
tok-globex tenant=globex actor=bob roles=read,submit,approve
`

// Issue 27, finding 1: a default-tenant token sending an Idempotency-Key
// that spells another tenant's key (tenant:acme:K, or the derivable
// tenant:acme:plan:<sha>) must land in its own namespace, never on acme's
// runbook, and acme's own submission must then make and run its runbook.
func TestDefaultTenantCannotTakeAnotherTenantsRequestKeys(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", tenantTokenFile)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)
	ctx := context.Background()
	attacker, acme := d.client("tok-def"), d.client("tok-acme")
	source := httpapi.SubmitRequest{Source: `(t.echo :v $v)`, Inputs: map[string]any{"v": "x"}}

	// With a key acme will choose.
	first, err := attacker.Submit(ctx, source, "tenant:acme:K")
	require.NoError(t, err)
	mine, err := acme.Submit(ctx, source, "K")
	require.NoError(t, err)
	require.True(t, mine.Created, "acme's submission was taken for a repeat of the default tenant's")
	require.NotEqual(t, first.ID, mine.ID)
	v, err := acme.Get(ctx, mine.ID.String())
	require.NoError(t, err, "acme cannot see the runbook its own submission answered with")
	waitUntil(t, "acme's runbook to complete", func() (bool, error) {
		v, err = acme.Get(ctx, mine.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})

	// With the key derived from the plan, mode and inputs, which anyone
	// who knows the source can compute: the attacker learns the plan's
	// hash from a submission of its own.
	source.Inputs = map[string]any{"v": "y"}
	own, err := attacker.Submit(ctx, source, "")
	require.NoError(t, err)
	view, err := attacker.Get(ctx, own.ID.String())
	require.NoError(t, err)
	inputs, err := json.Marshal(source.Inputs)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(view.PlanHash + "\x00" + string(rbtype.ModeExecute) + "\x00" + string(inputs)))
	derived := "tenant:acme:plan:" + hex.EncodeToString(sum[:])
	source.Inputs = map[string]any{"v": "z"} // another request under acme's derived key: a conflict if they met
	squat, err := attacker.Submit(ctx, source, derived)
	require.NoError(t, err)
	source.Inputs = map[string]any{"v": "y"}
	theirs, err := acme.Submit(ctx, source, "")
	require.NoError(t, err, "acme's plain submission met the squatter's runbook")
	require.True(t, theirs.Created)
	require.NotEqual(t, squat.ID, theirs.ID)
	_, err = acme.Get(ctx, theirs.ID.String())
	require.NoError(t, err)

	// The default tenant's own keys still dedupe its own requests.
	again, err := attacker.Submit(ctx, source, "")
	require.NoError(t, err)
	require.False(t, again.Created)
	require.Equal(t, own.ID, again.ID)
}
