package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// Client calls an rbd daemon's API. The zero value is not usable: set
// BaseURL.
type Client struct {
	// BaseURL is the daemon, such as http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as a bearer token when set.
	Token string
	// WebhookSecret signs notifications when set.
	WebhookSecret []byte
	// HTTP is the client used; nil means one without a timeout, which
	// live event streams need. Each call is bounded by its context.
	HTTP *http.Client
	// Now is the clock signatures are made with; nil means time.Now.
	Now func() time.Time
	// Header is sent with every request, before a call's own headers:
	// the caller's trace context (traceparent, tracestate,
	// X-Correlation-Id), say.
	Header http.Header
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// do sends a request and decodes a JSON answer into out. An error status
// is an *APIError.
func (c *Client) do(ctx context.Context, method, path string, body []byte, header http.Header, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, rd)
	if err != nil {
		return 0, err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("error reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, decodeError(resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("error decoding the answer to %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func decodeError(status int, raw []byte) error {
	var eb ErrorBody
	if err := json.Unmarshal(raw, &eb); err != nil || eb.Error.Code == "" {
		return &APIError{Status: status, ErrorInfo: ErrorInfo{Code: http.StatusText(status), Message: strings.TrimSpace(string(raw))}}
	}
	return &APIError{Status: status, ErrorInfo: eb.Error}
}

func (c *Client) doJSON(ctx context.Context, method, path string, in any, header http.Header, out any) (int, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return 0, err
	}
	return c.do(ctx, method, path, body, header, out)
}

// Submit starts a runbook. A repeat of an earlier submission answers with
// the existing runbook and Created false.
func (c *Client) Submit(ctx context.Context, req SubmitRequest, idempotencyKey string) (*SubmitResponse, error) {
	header := http.Header{}
	if idempotencyKey != "" {
		header.Set(IdempotencyKeyHeader, idempotencyKey)
	}
	var out SubmitResponse
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/runbooks", req, header, &out)
	return &out, err
}

// Get returns a runbook's state.
func (c *Client) Get(ctx context.Context, id string) (*runtime.RunbookView, error) {
	var out runtime.RunbookView
	_, err := c.do(ctx, http.MethodGet, "/v1/runbooks/"+url.PathEscape(id), nil, nil, &out)
	return &out, err
}

// List returns a page of runbooks, newest first.
func (c *Client) List(ctx context.Context, status rbtype.RunbookStatus, limit int, after string) (*ListResponse, error) {
	return c.ListTenant(ctx, "", status, limit, after)
}

// ListTenant is List of one tenant's runbooks, for an admin token; a
// token of one tenant lists its own whatever it names (tenant "" lists
// every tenant's for an admin).
func (c *Client) ListTenant(ctx context.Context, tenant string, status rbtype.RunbookStatus, limit int, after string) (*ListResponse, error) {
	q := url.Values{}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	if status != "" {
		q.Set("status", string(status))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if after != "" {
		q.Set("after", after)
	}
	path := "/v1/runbooks"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out ListResponse
	_, err := c.do(ctx, http.MethodGet, path, nil, nil, &out)
	return &out, err
}

// Events returns a runbook's whole ledger after an event id, page by page.
func (c *Client) Events(ctx context.Context, id string, after int64) ([]Event, error) {
	var all []Event
	for {
		var page EventsResponse
		path := fmt.Sprintf("/v1/runbooks/%s/events?after=%d&limit=%d", url.PathEscape(id), after, maxEventLimit)
		if _, err := c.do(ctx, http.MethodGet, path, nil, nil, &page); err != nil {
			return all, err
		}
		all = append(all, page.Events...)
		if len(page.Events) < maxEventLimit {
			return all, nil
		}
		after = page.Events[len(page.Events)-1].ID
	}
}

// Follow calls fn with each of a runbook's events after an event id, live,
// until the runbook finishes (it returns its final status), fn returns an
// error, or ctx ends. A dropped stream is resumed where it stopped.
func (c *Client) Follow(ctx context.Context, id string, after int64, fn func(Event) error) (rbtype.RunbookStatus, error) {
	backoff := 100 * time.Millisecond
	for {
		status, done, err := c.followOnce(ctx, id, &after, fn)
		if done || ctx.Err() != nil {
			return status, err
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Status < 500 {
			return "", err // a wrong id or token will not mend itself
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// followOnce reads one stream. done reports whether following is over:
// the stream ended the runbook, or fn or the server refused.
func (c *Client) followOnce(ctx context.Context, id string, after *int64, fn func(Event) error) (status rbtype.RunbookStatus, done bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.BaseURL, "/")+"/v1/runbooks/"+url.PathEscape(id)+"/events", nil)
	if err != nil {
		return "", true, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNoContent:
		// Finished, and nothing after the last event seen.
		v, err := c.Get(ctx, id)
		if err != nil {
			return "", true, err
		}
		return v.Status, true, nil
	case resp.StatusCode >= 300:
		raw, _ := io.ReadAll(resp.Body)
		return "", resp.StatusCode < 500, decodeError(resp.StatusCode, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	var name string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name == "end" {
				var end StreamEnd
				_ = json.Unmarshal(data, &end)
				return end.Status, true, nil
			}
			if len(data) > 0 {
				var ev Event
				if err := json.Unmarshal(data, &ev); err != nil {
					return "", true, fmt.Errorf("error decoding an event: %w", err)
				}
				if err := fn(ev); err != nil {
					return "", true, err
				}
				*after = ev.ID
			}
			name, data = "", nil
		case strings.HasPrefix(line, ":"):
			// a comment: the server's keep-alive
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, err
	}
	return "", false, io.ErrUnexpectedEOF
}

// Cancel cancels a runbook.
func (c *Client) Cancel(ctx context.Context, id, by string) (*CancelResponse, error) {
	var out CancelResponse
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/runbooks/"+url.PathEscape(id)+"/cancel", CancelRequest{By: by}, nil, &out)
	return &out, err
}

// Resolve settles an escalated step: action is "complete" (with result),
// "retry" or "fail".
func (c *Client) Resolve(ctx context.Context, id, step string, req ResolveRequest) (*ResolveResponse, error) {
	var out ResolveResponse
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/runbooks/"+url.PathEscape(id)+"/steps/"+url.PathEscape(step)+"/resolve", req, nil, &out)
	return &out, err
}

// Close lets a runbook held open finish.
func (c *Client) Close(ctx context.Context, id, by string) (*CancelResponse, error) {
	var out CancelResponse
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/runbooks/"+url.PathEscape(id)+"/close", CloseRequest{By: by}, nil, &out)
	return &out, err
}

// Retry runs a failed, partial or escalated runbook again: the steps
// named, or all its failed, skipped, cancelled and escalated ones.
func (c *Client) Retry(ctx context.Context, id string, req RetryRequest) (*RetryResponse, error) {
	var out RetryResponse
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/runbooks/"+url.PathEscape(id)+"/retry", req, nil, &out)
	return &out, err
}

// Regenerate starts a new runbook of a finished runbook's lineage, with
// inputs overriding the parent's.
func (c *Client) Regenerate(ctx context.Context, id string, req RegenerateRequest, idempotencyKey string) (*RegenerateResponse, error) {
	header := http.Header{}
	if idempotencyKey != "" {
		header.Set(IdempotencyKeyHeader, idempotencyKey)
	}
	var out RegenerateResponse
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/runbooks/"+url.PathEscape(id)+"/regenerate", req, header, &out)
	return &out, err
}

// Decide approves or rejects a step waiting at a gate.
func (c *Client) Decide(ctx context.Context, id, step string, approve bool, by, comment string) (*DecisionResponse, error) {
	verb := "reject"
	if approve {
		verb = "approve"
	}
	var out DecisionResponse
	path := "/v1/runbooks/" + url.PathEscape(id) + "/steps/" + url.PathEscape(step) + "/" + verb
	_, err := c.doJSON(ctx, http.MethodPost, path, DecisionRequest{By: by, Comment: comment}, nil, &out)
	return &out, err
}

// Extend adds source to a running runbook.
func (c *Client) Extend(ctx context.Context, id string, req ExtendRequest) (*ExtendResponse, error) {
	var out ExtendResponse
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/runbooks/"+url.PathEscape(id)+"/steps", req, nil, &out)
	return &out, err
}

// Notify delivers a notification, signed when the client has a webhook
// secret. It returns "accepted" or "duplicate"; a conflicting repeat is an
// *APIError with status 409.
func (c *Client) Notify(ctx context.Context, req NotificationRequest) (*NotificationResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	if len(c.WebhookSecret) > 0 {
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		header.Set(SignatureHeader, Sign(c.WebhookSecret, body, now()))
	}
	var out NotificationResponse
	_, err = c.do(ctx, http.MethodPost, "/v1/notifications", body, header, &out)
	return &out, err
}

// Costs sums the job ledger by group_by (tenant, actor, verb, day or
// month), between from and to when given (RFC 3339 times or dates).
func (c *Client) Costs(ctx context.Context, groupBy, from, to, tenant string) (*CostsResponse, error) {
	q := url.Values{}
	for k, v := range map[string]string{"group_by": groupBy, "from": from, "to": to, "tenant": tenant} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out CostsResponse
	_, err := c.do(ctx, http.MethodGet, "/v1/costs?"+q.Encode(), nil, nil, &out)
	return &out, err
}
