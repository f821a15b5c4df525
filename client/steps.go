package client

import (
	"context"
	"net/http"

	"github.com/runbookdev/runbook/apitype"
)

// DecisionRequest is the body of POST .../steps/{key}/approve and
// /reject.
type DecisionRequest = apitype.DecisionRequest

// DecisionResponse confirms a gate decision.
type DecisionResponse = apitype.DecisionResponse

// Approve lets a step waiting at its gate run.
func (c *Client) Approve(ctx context.Context, id, step string, req DecisionRequest) (*DecisionResponse, error) {
	return c.decide(ctx, id, step, "approve", req)
}

// Reject fails a step waiting at its gate (POLICY_DENIED); the runbook
// goes on as its on_failure says.
func (c *Client) Reject(ctx context.Context, id, step string, req DecisionRequest) (*DecisionResponse, error) {
	return c.decide(ctx, id, step, "reject", req)
}

func (c *Client) decide(ctx context.Context, id, step, verb string, req DecisionRequest) (*DecisionResponse, error) {
	var out DecisionResponse
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

// ResolveRequest is the body of POST .../steps/{key}/resolve: what
// becomes of an escalated step.
type ResolveRequest = apitype.ResolveRequest

// ResolveResponse confirms a resolution.
type ResolveResponse = apitype.ResolveResponse

// Resolve settles an escalated step.
func (c *Client) Resolve(ctx context.Context, id, step string, req ResolveRequest) (*ResolveResponse, error) {
	var out ResolveResponse
	if _, err := c.callJSON(ctx, http.MethodPost, runbookPath(id, "steps", step, "resolve"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StepDetail is GET /v1/runbooks/{id}/steps/{key}: one step as its view
// has it, and its arguments as frozen and as resolved, what it does to
// the outside world, and the gate that applies to it.
type StepDetail = apitype.StepDetail

// Step returns one step of a runbook in detail.
func (c *Client) Step(ctx context.Context, id, key string) (*StepDetail, error) {
	var out StepDetail
	if _, err := c.call(ctx, http.MethodGet, runbookPath(id, "steps", key), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
