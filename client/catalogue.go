package client

import (
	"context"
	"net/http"

	"github.com/runbookdev/runbook/apitype"
)

// Whoami asks who the client's token speaks for. Any valid token may ask.
func (c *Client) Whoami(ctx context.Context) (*apitype.WhoamiResponse, error) {
	var out apitype.WhoamiResponse
	if _, err := c.call(ctx, http.MethodGet, "/v1/whoami", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// The actions a policy takes on a verb's steps.
const (
	PolicyDeny     = "deny"      // a plan calling it is refused (403 POLICY_DENIED)
	PolicyGate     = "gate"      // each step waits for a person
	PolicyAutoExec = "auto_exec" // its steps run unattended (a gate of its own still holds)
	PolicyNone     = "none"      // no rule speaks of it
)

// Verbs returns the daemon's verb catalogue, or, when name is given, that
// one verb (an *Error with CodeNotFound, and a did-you-mean, when there is
// none).
func (c *Client) Verbs(ctx context.Context, name string) (*apitype.VerbsResponse, error) {
	var out apitype.VerbsResponse
	if _, err := c.call(ctx, http.MethodGet, withQuery("/v1/verbs", "name", name), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
