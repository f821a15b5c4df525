package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// tokens are the API's bearer tokens, kept as SHA-256 digests so that
// comparing them takes the same time whatever the length of the guess.
type tokens [][sha256.Size]byte

func newTokens(plain []string) tokens {
	var t tokens
	for _, p := range plain {
		if p != "" {
			t = append(t, sha256.Sum256([]byte(p)))
		}
	}
	return t
}

// allows reports whether the request carries one of the tokens. With no
// tokens configured every request is allowed (rbd serve warns about it).
func (t tokens) allows(r *http.Request) bool {
	if len(t) == 0 {
		return true
	}
	scheme, given, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(given)))
	found := 0
	for i := range t {
		// Check every token, so the time taken does not say which matched.
		found |= subtle.ConstantTimeCompare(sum[:], t[i][:])
	}
	return found == 1
}
