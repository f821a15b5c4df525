package client

import (
	"context"
	"net/http"

	"github.com/runbookdev/runbook/apitype"
)

// Whoami is GET /v1/whoami: who the client's token speaks for, and what
// it may do. Fields a later daemon adds are ignored.
type Whoami = apitype.WhoamiResponse

// Whoami asks who the client's token speaks for. Any valid token may ask.
func (c *Client) Whoami(ctx context.Context) (*Whoami, error) {
	var out Whoami
	if _, err := c.call(ctx, http.MethodGet, "/v1/whoami", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Verb is one verb of the daemon's catalogue: what it takes and gives,
// and what it does to the world.
type Verb = apitype.VerbInfo

// The actions a policy takes on a verb's steps.
const (
	PolicyDeny     = "deny"      // a plan calling it is refused (403 POLICY_DENIED)
	PolicyGate     = "gate"      // each step waits for a person
	PolicyAutoExec = "auto_exec" // its steps run unattended (a gate of its own still holds)
	PolicyNone     = "none"      // no rule speaks of it
)

// VerbPolicy is what a tenant's policy does with a verb's steps, and the
// rule that decides.
type VerbPolicy = apitype.PolicyVerdict

// VerbsResponse is GET /v1/verbs.
type VerbsResponse = apitype.VerbsResponse

// Verbs returns the daemon's verb catalogue, or, when name is given, that
// one verb (an *Error with CodeNotFound, and a did-you-mean, when there is
// none).
func (c *Client) Verbs(ctx context.Context, name string) (*VerbsResponse, error) {
	var out VerbsResponse
	if _, err := c.call(ctx, http.MethodGet, withQuery("/v1/verbs", "name", name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
