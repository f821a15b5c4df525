package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/runbookdev/runbook/apitype"
)

// DefaultServer is where rbd serve listens unless told otherwise.
const DefaultServer = "http://127.0.0.1:8080"

// Client calls an rbd daemon's API. Set BaseURL (and Token, when the
// daemon has an --api-token-file); every other field has a default. A
// Client is safe for concurrent use once set up.
type Client struct {
	// BaseURL is the daemon, such as http://127.0.0.1:8080.
	BaseURL string
	// Token is sent as "Authorization: Bearer <Token>" when set.
	Token string
	// WebhookSecret signs notifications when set: the secret of the
	// daemon's --webhook-secret-file.
	WebhookSecret []byte
	// HTTPClient sends the requests; nil means one without a timeout,
	// since live event streams last as long as their runbooks. Each call
	// is bounded by its context.
	HTTPClient *http.Client
	// Header is sent with every request, before a call's own headers: the
	// caller's trace context (traceparent, tracestate, X-Correlation-Id),
	// say.
	Header http.Header
	// RetryPolicy says how 503 answers are retried; nil means
	// DefaultRetryPolicy.
	RetryPolicy *RetryPolicy
	// Now is the clock notifications are signed with; nil means time.Now.
	Now func() time.Time
}

// FromEnv is a Client for the daemon RBD_SERVER names (DefaultServer when
// unset), with the token RBD_TOKEN holds: the variables rbd's own client
// commands read.
func FromEnv() *Client {
	c := &Client{BaseURL: os.Getenv("RBD_SERVER"), Token: os.Getenv("RBD_TOKEN")}
	if c.BaseURL == "" {
		c.BaseURL = DefaultServer
	}
	return c
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Response is an answer as the daemon sent it, for Do.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Do sends one request to the API and returns the answer whatever its
// status, retrying 503s as the RetryPolicy says: the raw access under the
// typed methods, for a caller that relays the daemon's JSON as it is
// (rbd mcp's tools). path is the path and query, such as
// /v1/runbooks?limit=5; body, when not nil, is sent as JSON. An error is
// returned only when no answer came.
func (c *Client) Do(ctx context.Context, method, path string, header http.Header, body []byte) (*Response, error) {
	policy := c.RetryPolicy
	if policy == nil {
		policy = &DefaultRetryPolicy
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.send(ctx, method, path, header, body)
		if err != nil {
			return nil, err
		}
		wait, retry := policy.next(attempt, resp)
		if !retry {
			return resp, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// send makes one attempt.
func (c *Client) send(ctx context.Context, method, path string, header http.Header, body []byte) (*Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	c.setHeaders(req, header)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("error reading the answer to %s %s: %w", method, path, err)
	}
	return &Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: raw}, nil
}

// setHeaders puts the client's headers, then the call's, then the token
// on a request.
func (c *Client) setHeaders(req *http.Request, header http.Header) {
	for k, v := range c.Header {
		req.Header[k] = v
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
}

// call sends a request and decodes a JSON answer into out (when not
// nil). An error status is an *Error.
func (c *Client) call(ctx context.Context, method, path string, header http.Header, body []byte, out any) (*Response, error) {
	resp, err := c.Do(ctx, method, path, header, body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return resp, DecodeError(resp)
	}
	if out != nil {
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return resp, fmt.Errorf("error decoding the answer to %s %s: %w", method, path, err)
		}
	}
	return resp, nil
}

// callJSON is call with in encoded as the body.
func (c *Client) callJSON(ctx context.Context, method, path string, header http.Header, in, out any) (*Response, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return c.call(ctx, method, path, header, body, out)
}

// DecodeError reads an error answer: the API's {"error": {...}} body, or,
// for anything else (a proxy's page), the status and the text.
func DecodeError(resp *Response) *Error {
	var eb apitype.ErrorBody
	e := &Error{}
	if err := json.Unmarshal(resp.Body, &eb); err == nil && eb.Error.Code != "" {
		e.ErrorInfo = eb.Error
	} else {
		e.Code, e.Message = apitype.ErrorCode(http.StatusText(resp.StatusCode)), strings.TrimSpace(string(resp.Body))
	}
	e.StatusCode = resp.StatusCode
	e.RetryAfter, _ = retryAfter(resp.Header, time.Now())
	return e
}

// runbookPath is /v1/runbooks/{id} and what follows it, the id escaped.
func runbookPath(id string, rest ...string) string {
	p := "/v1/runbooks/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// withQuery adds a query to a path, leaving out empty values.
func withQuery(path string, pairs ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
