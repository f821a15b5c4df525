package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
)

// IdempotencyKeyHeader carries a submission's or a regeneration's key.
const IdempotencyKeyHeader = "Idempotency-Key"

// NewIdempotencyKey returns a random key (32 hex digits) for a request
// that should never be taken for an earlier one.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func keyHeader(key string) http.Header {
	h := http.Header{}
	if key != "" {
		h.Set(IdempotencyKeyHeader, key)
	}
	return h
}

// Submit starts a runbook. A source that does not compile is an *Error
// with CodeCompileFailed and the diagnostics; a plan this daemon will not
// run, CodeInvalidPlan.
func (c *Client) Submit(ctx context.Context, req apitype.SubmitRequest) (*apitype.SubmitResponse, error) {
	var out apitype.SubmitResponse
	if _, err := c.callJSON(ctx, http.MethodPost, "/v1/runbooks", keyHeader(req.IdempotencyKey), req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get returns a runbook's view.
func (c *Client) Get(ctx context.Context, id string) (*apitype.RunbookView, error) {
	var out apitype.RunbookView
	if _, err := c.call(ctx, http.MethodGet, runbookPath(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetPage returns a runbook's view showing limit of its steps (at most
// 10000) after position after: the StepsNext of the page before, or 0.
func (c *Client) GetPage(ctx context.Context, id string, after, limit int) (*apitype.RunbookView, error) {
	var out apitype.RunbookView
	path := fmt.Sprintf("%s?steps_after=%d&steps_limit=%d", runbookPath(id), after, limit)
	if _, err := c.call(ctx, http.MethodGet, path, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRequest is GET /v1/runbooks's query; every field is optional.
type ListRequest struct {
	// Status keeps only the runbooks in it.
	Status rbtype.RunbookStatus
	// Limit is the page's size, 1 to 1000 (the daemon's default is 50).
	Limit int
	// After is the Next of the page before.
	After string
	// Tenant, for an admin token, lists only this tenant's runbooks; a
	// token of one tenant lists its own whatever it names.
	Tenant string
	// State keeps only the runbooks in this state as the view says it: a
	// status, or parked, awaiting_approval, held_open.
	State string
	// NeedsPerson, when set, keeps only the runbooks that wait on a
	// person (a gate, an escalation, a failure a retry may fix), or only
	// the others.
	NeedsPerson *bool
}

// List returns a page of runbooks, newest first.
func (c *Client) List(ctx context.Context, req ListRequest) (*apitype.ListResponse, error) {
	limit := ""
	if req.Limit > 0 {
		limit = strconv.Itoa(req.Limit)
	}
	needs := ""
	if req.NeedsPerson != nil {
		needs = strconv.FormatBool(*req.NeedsPerson)
	}
	path := withQuery("/v1/runbooks", "tenant", req.Tenant, "status", string(req.Status), "state", req.State,
		"needs_person", needs, "limit", limit, "after", req.After)
	var out apitype.ListResponse
	if _, err := c.call(ctx, http.MethodGet, path, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Plan returns a runbook's frozen plan, as `rbc compile` writes it, after
// any extensions.
func (c *Client) Plan(ctx context.Context, id string) (json.RawMessage, error) {
	resp, err := c.call(ctx, http.MethodGet, runbookPath(id, "plan"), nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(resp.Body), nil
}

// Cancel cancels a runbook: the steps that have not finished are
// cancelled and its waits ended; completed work stays.
func (c *Client) Cancel(ctx context.Context, id string, req apitype.CancelRequest) (*apitype.CancelResponse, error) {
	var out apitype.CancelResponse
	if _, err := c.callJSON(ctx, http.MethodPost, runbookPath(id, "cancel"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Close lets a runbook submitted with HoldOpen finish.
func (c *Client) Close(ctx context.Context, id string, req apitype.CloseRequest) (*apitype.CancelResponse, error) {
	var out apitype.CancelResponse
	if _, err := c.callJSON(ctx, http.MethodPost, runbookPath(id, "close"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Retry runs a failed, partial or escalated runbook again from where it
// stopped, with the same idempotency keys, so an effect that happened is
// not repeated.
func (c *Client) Retry(ctx context.Context, id string, req apitype.RetryRequest) (*apitype.RetryResponse, error) {
	var out apitype.RetryResponse
	if _, err := c.callJSON(ctx, http.MethodPost, runbookPath(id, "retry"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Regenerate starts a new runbook of a finished runbook's lineage: its
// plan, its inputs with those given overriding them.
func (c *Client) Regenerate(ctx context.Context, id string, req apitype.RegenerateRequest) (*apitype.RegenerateResponse, error) {
	var out apitype.RegenerateResponse
	if _, err := c.callJSON(ctx, http.MethodPost, runbookPath(id, "regenerate"), keyHeader(req.IdempotencyKey), req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Extend adds source to a running runbook.
func (c *Client) Extend(ctx context.Context, id string, req apitype.ExtendRequest) (*apitype.ExtendResponse, error) {
	var out apitype.ExtendResponse
	if _, err := c.callJSON(ctx, http.MethodPost, runbookPath(id, "steps"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
