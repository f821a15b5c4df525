package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// DecisionRequest is the body of POST .../steps/{key}/approve and
// /reject.
type DecisionRequest struct {
	// By is who decides; optional. A token that names its actor is
	// recorded as that actor (a different By is kept as a note); for one
	// that names none, By is recorded, or else the token's token-<n>.
	By      string `json:"by,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// DecisionResponse confirms a gate decision.
type DecisionResponse struct {
	ID       uuid.UUID           `json:"id"`
	Step     string              `json:"step"`
	Decision rbtype.GateDecision `json:"decision"`
	// By is who the ledger records as deciding (an older daemon leaves
	// it empty).
	By string `json:"by,omitempty"`
}

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
type ResolveRequest struct {
	// Action is ResolveComplete (with Result), ResolveRetry or
	// ResolveFail.
	Action string          `json:"action"`
	Result json.RawMessage `json:"result,omitempty"`
	By     string          `json:"by,omitempty"`
}

// ResolveResponse confirms a resolution.
type ResolveResponse struct {
	ID     uuid.UUID `json:"id"`
	Step   string    `json:"step"`
	Action string    `json:"action"`
}

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
type StepDetail struct {
	Step
	// Args are as the plan froze them, with {"$ref"} and {"$input"}
	// placeholders.
	Args map[string]any `json:"args"`
	// ResolvedArgs are their values: its last attempt's (ArgsFrom
	// "attempt"), or resolved from what is known now ("resolved", or
	// "partial" when a reference waits on a step without a result).
	ResolvedArgs json.RawMessage    `json:"resolved_args"`
	ArgsFrom     string             `json:"args_from"`
	Risk         rbtype.Risk        `json:"risk"`
	SideEffects  rbtype.SideEffects `json:"side_effects"`
	Target       string             `json:"target,omitempty"`
	// GateWhy is one of the Gate... constants when the step has a gate
	// of its own; Policy what the policy said, when it gated the step.
	GateWhy string          `json:"gate_why,omitempty"`
	Policy  json.RawMessage `json:"policy,omitempty"`
	// GatedBy is the step whose gate stands in front of this one's
	// effect: itself, one upstream, or none.
	GatedBy   string          `json:"gated_by,omitempty"`
	Execution json.RawMessage `json:"execution"`
	VerbHash  string          `json:"verb_hash"`
	Pos       json.RawMessage `json:"pos,omitempty"`
}

// Step returns one step of a runbook in detail.
func (c *Client) Step(ctx context.Context, id, key string) (*StepDetail, error) {
	var out StepDetail
	if _, err := c.call(ctx, http.MethodGet, runbookPath(id, "steps", key), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
