package httpapi_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
)

// TestUnstorableValuesAre400 sends values PostgreSQL cannot store, as
// docs/reliability.md did: each is the caller's mistake, 400 naming the field, not a
// 500 from the database.
func TestUnstorableValuesAre400(t *testing.T) {
	b := setup(t)
	notify := func(body string) (int, string) {
		sig := client.Sign([]byte(testSecret), []byte(body), time.Now())
		return b.raw(t, "POST", "/v1/notifications", body, client.SignatureHeader, sig)
	}
	// The API's own checks come first; the store's SQLSTATEs (a NUL,
	// bad UTF-8, a number out of range, an index row too large) are the
	// backstop for what they miss, such as a step key from the source.
	cases := []struct {
		name, path, body, want string
	}{
		{"NUL in a result", "/v1/notifications", `{"correlation_key": "k1", "status": "completed", "result": {"a": "x\u0000y"}}`, `result.a`},
		{"NUL in a result's key", "/v1/notifications", `{"correlation_key": "k2", "status": "completed", "result": {"a\u0000": 1}}`, `result`},
		{"NUL in a correlation key", "/v1/notifications", `{"correlation_key": "k\u0000", "status": "completed"}`, `correlation_key`},
		{"invalid UTF-8", "/v1/notifications", "{\"correlation_key\": \"k3\", \"status\": \"completed\", \"result\": {\"a\": \"\xff\xfe\"}}", `UTF-8`},
		{"a number out of range", "/v1/notifications", `{"correlation_key": "k4", "status": "completed", "result": {"n": [1, 1e999999]}}`, `result.n[1]`},
		{"a number too small", "/v1/notifications", `{"correlation_key": "k5", "status": "completed", "result": {"n": 1e-999999}}`, `result.n`},
		{"a long correlation key", "/v1/notifications", `{"correlation_key": "` + randomHex(10000) + `", "status": "completed"}`, `correlation_key`},
		{"NUL in inputs", "/v1/runbooks", `{"source": "(t.echo :v $v)", "inputs": {"v": "\u0000"}}`, `inputs.v`},
		{"NUL in the actor", "/v1/runbooks", `{"source": "(t.echo :v \"x\")", "actor": "a\u0000"}`, `actor`},
		{"a long step key", "/v1/runbooks", `{"source": "(t.echo :v \"x\" :as @` + "s" + randomHex(10000) + `)"}`, `step`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var status int
			var body string
			if c.path == "/v1/notifications" {
				status, body = notify(c.body)
			} else {
				status, body = b.raw(t, "POST", c.path, c.body)
			}
			require.Equal(t, http.StatusBadRequest, status, body)
			var eb apitype.ErrorBody
			require.NoError(t, json.Unmarshal([]byte(body), &eb))
			require.Contains(t, eb.Error.Message, c.want)
		})
	}
}

// randomHex is n characters that do not compress: PostgreSQL compresses
// a long repetitive value below the index row limit.
func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
