package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// tenantTokenFile: a non-admin token of the default tenant, and two
// tenants' tokens.
const tenantTokenFile = `tok-def actor=dora roles=read,submit,approve
tok-acme tenant=acme actor=alice roles=read,submit,approve
tok-globex tenant=globex actor=bob roles=read,submit,approve
`

// Under attack (docs/reliability.md), row 1: a default-tenant token sending an Idempotency-Key
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
	source := apitype.SubmitRequest{Source: `(t.echo :v $v)`, Inputs: map[string]any{"v": "x"}}

	// With a key acme will choose.
	first, err := attacker.Submit(ctx, withKey(source, "tenant:acme:K"))
	require.NoError(t, err)
	mine, err := acme.Submit(ctx, withKey(source, "K"))
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
	own, err := attacker.Submit(ctx, source)
	require.NoError(t, err)
	view, err := attacker.Get(ctx, own.ID.String())
	require.NoError(t, err)
	inputs, err := json.Marshal(source.Inputs)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(view.PlanHash + "\x00" + string(rbtype.ModeExecute) + "\x00" + string(inputs)))
	derived := "tenant:acme:plan:" + hex.EncodeToString(sum[:])
	source.Inputs = map[string]any{"v": "z"} // another request under acme's derived key: a conflict if they met
	squat, err := attacker.Submit(ctx, withKey(source, derived))
	require.NoError(t, err)
	source.Inputs = map[string]any{"v": "y"}
	theirs, err := acme.Submit(ctx, source)
	require.NoError(t, err, "acme's plain submission met the squatter's runbook")
	require.True(t, theirs.Created)
	require.NotEqual(t, squat.ID, theirs.ID)
	_, err = acme.Get(ctx, theirs.ID.String())
	require.NoError(t, err)

	// The default tenant's own keys still dedupe its own requests.
	again, err := attacker.Submit(ctx, source)
	require.NoError(t, err)
	require.False(t, again.Created)
	require.Equal(t, own.ID, again.ID)
}

// The namespaces rbd derived runbook ids and correlation keys in before
// docs/reliability.md, as anyone could read them in its source: an attacker's copy.
var (
	publicRunbookNamespace     = uuid.MustParse("6b1f0c7e-4d1a-5a53-9c2e-7e0a1f3b9d21")
	publicCorrelationNamespace = uuid.MustParse("d3a8e5b2-61c4-5f09-b7e2-4a1c8d9f0e63")
)

// publicCorrelationKey derives a wait's correlation key from public facts
// only, as rbd did: the runbook's id from its request key, then the key
// from the id, the step and the attempt.
func publicCorrelationKey(requestKey, step string, attempt int) string {
	id := uuid.NewSHA1(publicRunbookNamespace, []byte(requestKey))
	material := append(append(append([]byte{}, id[:]...), step...), 0)
	material = strconv.AppendInt(material, int64(attempt), 10)
	return uuid.NewSHA1(publicCorrelationNamespace, material).String()
}

// webhookTenantSecrets: each tenant signs with a secret of its own.
const webhookTenantSecrets = `whsec-acme tenant=acme
whsec-globex tenant=globex
`

// Under attack (docs/reliability.md), row 8: holding only its own webhook secret, globex works
// out the correlation key of a wait acme has not yet started, from the
// plan, the mode, acme's name and the inputs, and notifies it first. acme's
// step must still resume on acme's own notification.
func TestAnotherTenantCannotPreemptAFutureWait(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", tenantTokenFile)
	secrets := e.file(t, "secrets", webhookTenantSecrets)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--webhook-secret-file", secrets)
	ctx := context.Background()
	acme := d.client("tok-acme")
	acme.WebhookSecret = []byte("whsec-acme")
	globex := d.client("tok-globex")
	globex.WebhookSecret = []byte("whsec-globex")
	source := apitype.SubmitRequest{Source: "(t.wait :as @w)\n(t.echo :v $v :after @w)", Inputs: map[string]any{"v": "order-7"}}

	// globex learns the plan's hash by submitting the same source itself.
	own, err := globex.Submit(ctx, source)
	require.NoError(t, err)
	view, err := globex.Get(ctx, own.ID.String())
	require.NoError(t, err)
	inputs, err := json.Marshal(source.Inputs)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(view.PlanHash + "\x00" + string(rbtype.ModeExecute) + "\x00" + string(inputs)))
	guess := publicCorrelationKey("tenant:acme:plan:"+hex.EncodeToString(sum[:]), "w", 1)
	_, err = globex.Notify(ctx, apitype.NotificationRequest{CorrelationKey: guess, Status: "completed", Result: json.RawMessage(`{"forged":true}`)})
	require.NoError(t, err)

	sub, err := acme.Submit(ctx, source)
	require.NoError(t, err)
	var key string
	waitUntil(t, "acme's step to park", func() (bool, error) {
		v, err := acme.Get(ctx, sub.ID.String())
		if err != nil || len(v.BlockedOn) == 0 {
			return false, err
		}
		key = v.BlockedOn[0].CorrelationKey
		return true, nil
	})
	require.NotEqual(t, guess, key, "acme's correlation key can be computed from public facts")
	_, err = acme.Notify(ctx, apitype.NotificationRequest{CorrelationKey: key, Status: "completed", Result: json.RawMessage(`{"real":true}`)})
	require.NoError(t, err, "acme's own notification was refused")
	waitUntil(t, "acme's runbook to complete", func() (bool, error) {
		v, err := acme.Get(ctx, sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
	v, err := acme.Get(ctx, sub.ID.String())
	require.NoError(t, err)
	require.JSONEq(t, `{"real":true}`, string(v.Outcomes["w"]))
}

// Under attack (docs/reliability.md), row 8: a notification signed with globex's secret for a
// key acme's step waits on is answered exactly as one for a key nobody
// waits on (202, kept in globex's own namespace), not 404: the answer
// says nothing about other tenants' waits. Nor does it take the key from
// acme, whose own notification then resumes its step.
func TestAForeignNotificationIsNoExistenceOracle(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tokens := e.file(t, "tokens", tenantTokenFile)
	secrets := e.file(t, "secrets", webhookTenantSecrets)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--webhook-secret-file", secrets)
	ctx := context.Background()
	acme := d.client("tok-acme")
	acme.WebhookSecret = []byte("whsec-acme")
	globex := d.client("tok-globex")
	globex.WebhookSecret = []byte("whsec-globex")
	sub, err := acme.Submit(ctx, apitype.SubmitRequest{Source: "(t.wait :as @w)"})
	require.NoError(t, err)
	var key string
	waitUntil(t, "acme's step to park", func() (bool, error) {
		v, err := acme.Get(ctx, sub.ID.String())
		if err != nil || len(v.BlockedOn) == 0 {
			return false, err
		}
		key = v.BlockedOn[0].CorrelationKey
		return true, nil
	})
	answer := func(c *client.Client, key, result string) (int, string) {
		body := `{"correlation_key": "` + key + `", "status": "completed", "result": ` + result + `}`
		return send(t, "POST", d.server+"/v1/notifications", body,
			client.SignatureHeader, client.Sign(c.WebhookSecret, []byte(body), time.Now()))
	}
	unknownStatus, unknownBody := answer(globex, uuid.NewString(), `{}`)
	parkedStatus, parkedBody := answer(globex, key, `{}`)
	require.Equal(t, unknownStatus, parkedStatus, "another tenant's wait answers %s, no wait %s", parkedBody, unknownBody)
	require.Equal(t, unknownBody, parkedBody)
	require.Equal(t, http.StatusAccepted, parkedStatus)
	// Heartbeats alike.
	beat := func(key string) (int, string) {
		body := `{"correlation_key": "` + key + `", "status": "heartbeat", "extend": "PT2H"}`
		status, out := send(t, "POST", d.server+"/v1/notifications", body,
			client.SignatureHeader, client.Sign(globex.WebhookSecret, []byte(body), time.Now()))
		return status, strings.ReplaceAll(out, key[:32], "KEY")
	}
	s1, b1 := beat(uuid.NewString())
	s2, b2 := beat(key)
	require.Equal(t, s1, s2)
	require.Equal(t, b1, b2)

	status, body := answer(acme, key, `{"mine":true}`)
	require.Equal(t, http.StatusAccepted, status, body)
	waitUntil(t, "acme's runbook to complete", func() (bool, error) {
		v, err := acme.Get(ctx, sub.ID.String())
		return err == nil && v.Status == rbtype.RunbookComplete, err
	})
}

// withKey is req with an Idempotency-Key.
func withKey(req apitype.SubmitRequest, key string) apitype.SubmitRequest {
	req.IdempotencyKey = key
	return req
}
