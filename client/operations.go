package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/runbookdev/runbook/apitype"
)

// CostsRequest is GET /v1/costs's query; every field is optional.
type CostsRequest struct {
	// GroupBy is tenant, actor, verb (the default), day or month.
	GroupBy string
	// From (included) and To (not) are RFC 3339 times or dates.
	From, To string
	// Tenant, for an admin token, sums only this tenant's attempts.
	Tenant string
}

// Costs sums the job ledger.
func (c *Client) Costs(ctx context.Context, req CostsRequest) (*apitype.CostsResponse, error) {
	path := withQuery("/v1/costs", "group_by", req.GroupBy, "from", req.From, "to", req.To, "tenant", req.Tenant)
	var out apitype.CostsResponse
	if _, err := c.call(ctx, http.MethodGet, path, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Healthz asks whether the daemon answers.
func (c *Client) Healthz(ctx context.Context) (*apitype.Health, error) {
	var out apitype.Health
	if _, err := c.call(ctx, http.MethodGet, "/healthz", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Readyz asks whether the daemon can work: its database answers and its
// schema is current. Not ready is an *Error with CodeNotReady (a 503,
// retried as the RetryPolicy says).
func (c *Client) Readyz(ctx context.Context) (*apitype.Health, error) {
	var out apitype.Health
	if _, err := c.call(ctx, http.MethodGet, "/readyz", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Metrics returns the daemon's Prometheus metrics, in the text format.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	resp, err := c.call(ctx, http.MethodGet, "/metrics", http.Header{"Accept": {"text/plain"}}, nil, nil)
	if err != nil {
		return "", err
	}
	return string(resp.Body), nil
}

// OpenAPI returns the API's OpenAPI 3.1 document, as JSON.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	resp, err := c.call(ctx, http.MethodGet, "/v1/openapi.json", nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(resp.Body), nil
}
