package client

import (
	"context"
	"net/http"

	"github.com/runbookdev/runbook/apitype"
)

// Approve lets a step waiting at its gate run.
func (c *Client) Approve(ctx context.Context, id, step string, req apitype.DecisionRequest) (*apitype.DecisionResponse, error) {
	return c.decide(ctx, id, step, "approve", req)
}

// Reject fails a step waiting at its gate (POLICY_DENIED); the runbook
// goes on as its on_failure says.
func (c *Client) Reject(ctx context.Context, id, step string, req apitype.DecisionRequest) (*apitype.DecisionResponse, error) {
	return c.decide(ctx, id, step, "reject", req)
}

func (c *Client) decide(ctx context.Context, id, step, verb string, req apitype.DecisionRequest) (*apitype.DecisionResponse, error) {
	var out apitype.DecisionResponse
	if _, err := c.callJSON(ctx, http.MethodPost, runbookPath(id, "steps", step, verb), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// The actions of a resolution (ResolveRequest.Action).
const (
	ResolveComplete = "complete"
	ResolveRetry    = "retry"
	ResolveFail     = "fail"
)

// Resolve settles an escalated step.
func (c *Client) Resolve(ctx context.Context, id, step string, req apitype.ResolveRequest) (*apitype.ResolveResponse, error) {
	var out apitype.ResolveResponse
	if _, err := c.callJSON(ctx, http.MethodPost, runbookPath(id, "steps", step, "resolve"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Step returns one step of a runbook in detail.
func (c *Client) Step(ctx context.Context, id, key string) (*apitype.StepDetail, error) {
	var out apitype.StepDetail
	if _, err := c.call(ctx, http.MethodGet, runbookPath(id, "steps", key), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
