package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/runbookdev/runbook/apitype"
)

// Outcome reads an outcome with its provenance.
func (c *Client) Outcome(ctx context.Context, id string) (*apitype.OutcomeView, error) {
	var out apitype.OutcomeView
	if _, err := c.call(ctx, http.MethodGet, "/v1/outcomes/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
