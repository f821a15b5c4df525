package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/runbookdev/runbook/apitype"
)

// Produced is one typed outcome of a runbook, as its view lists it
// (docs/design/semantics.md section 13).
type Produced = apitype.ProducedView

// Outcome is what a step produced, with what it was made from.
type Outcome = apitype.Outcome

// OutcomeView is GET /v1/outcomes/{id}: the outcome, the arguments of the
// attempt that made it, what it was made from (and what that was made
// from), and its earlier versions, newest first.
type OutcomeView = apitype.OutcomeView

// Outcome reads an outcome with its provenance.
func (c *Client) Outcome(ctx context.Context, id string) (*OutcomeView, error) {
	var out OutcomeView
	if _, err := c.call(ctx, http.MethodGet, "/v1/outcomes/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
