package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Under attack (docs/reliability.md), row 13: /metrics sums every tenant's costs, tokens and
// steps by verb, so once tokens name tenants it needs a token with the
// metrics role (or admin): a tenant's own token is 403, none is 401. With
// --public-metrics it is public as before; without tenants it stays
// public.
func TestMetricsNeedATokenWhenTenantsAreConfigured(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", e2eVerbs)
	tenants := e.file(t, "tenants", tenantTokenFile)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tenants)
	status, _ := send(t, "GET", d.server+"/metrics", "")
	require.Equal(t, http.StatusUnauthorized, status, "no token")
	status, _ = send(t, "GET", d.server+"/metrics", "", "Authorization", "Bearer tok-acme")
	require.Equal(t, http.StatusForbidden, status, "a tenant's token")
	status, _ = send(t, "GET", d.server+"/healthz", "")
	require.Equal(t, http.StatusOK, status, "health stays public")

	tokens := e.file(t, "tokens", tenantTokenFile+"tok-prom actor=prometheus roles=metrics\n")
	d = e.start(t, "--verbs", verbs, "--api-token-file", tokens)
	status, body := send(t, "GET", d.server+"/metrics", "", "Authorization", "Bearer tok-prom")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "rbd_parked_invocations")
	status, _ = send(t, "GET", d.server+"/v1/runbooks", "", "Authorization", "Bearer tok-prom")
	require.Equal(t, http.StatusForbidden, status, "the metrics role reads metrics only")

	public := e.start(t, "--verbs", verbs, "--api-token-file", tokens, "--public-metrics")
	status, _ = send(t, "GET", public.server+"/metrics", "")
	require.Equal(t, http.StatusOK, status, "--public-metrics")

	bare := e.start(t, "--verbs", verbs, "--api-token-file", e.file(t, "bare", "tok\n"))
	status, _ = send(t, "GET", bare.server+"/metrics", "")
	require.Equal(t, http.StatusOK, status, "no tenants: public, as before")
}
