package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/runbookdev/runbook/runtime"
)

// tokens are the API's bearer tokens, kept as SHA-256 digests so that
// comparing them takes the same time whatever the length of the guess,
// each with the principal it speaks for.
type tokens struct {
	digests    [][sha256.Size]byte
	principals []Principal
}

// anyone is who calls when no tokens are configured: every role, every
// tenant, as before tokens (rbd serve warns about it).
var anyone = Principal{Tenant: runtime.DefaultTenant, Actor: "anonymous", Roles: []Role{RoleAdmin}}

// principal finds the request's token and says who it speaks for; false
// when the request carries none of the tokens.
func (t tokens) principal(r *http.Request) (*Principal, bool) {
	if len(t.digests) == 0 {
		return &anyone, true
	}
	scheme, given, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(given)))
	found := -1
	for i := range t.digests {
		// Check every token, so the time taken does not say which matched.
		if subtle.ConstantTimeCompare(sum[:], t.digests[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, false
	}
	return &t.principals[found], true
}
