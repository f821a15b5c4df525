package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// maxResponseBody bounds what an HTTP handler reads of a response.
const maxResponseBody = 10 << 20

// httpCall is one HTTP request built from params and arguments.
type httpCall struct{ deps BuiltinDeps }

func (h *httpCall) Call(ctx context.Context, c *Call) (Result, error) {
	resp, header, err := sendFor(ctx, h.deps, c, c.Args)
	if err != nil {
		return Result{}, err
	}
	return Complete(resp).WithUsage(usageOf(header)), nil
}

// UsageHeader is the response header a service behind http.call reports
// what the call used in (docs/design/semantics.md section 3), as JSON:
// {"tokens_in":..,"tokens_out":..,"model":"..","cost_usd":..,"credits":..}.
const UsageHeader = "Rbd-Usage"

// usageOf reads a response's usage header. One that is missing, too long
// or not that JSON reports nothing: what a call used is accounting, and a
// provider's malformed header must not fail a call that succeeded.
func usageOf(h http.Header) driver.Usage {
	var u driver.Usage
	raw := h.Get(UsageHeader)
	if raw == "" || len(raw) > 4096 || json.Unmarshal([]byte(raw), &u) != nil {
		return driver.Usage{}
	}
	if checkUsage(u) != nil {
		return driver.Usage{} // impossible figures, as a malformed header
	}
	if !isObject(u.Parameters) {
		u.Parameters = nil // the rest of the report stands
	}
	return u
}

// DryRun rehearses the call as params.dry_run says (docs/design/semantics.md section
// 7): "none" (the default) says what request would be sent without
// sending anything; "head" sends a HEAD request to the URL, to show it
// answers; "url" sends the same request, body and all, to
// params.dry_run_url, a validation endpoint whose JSON answer is the dry
// run's result (what :expect checks). Requests a dry run sends carry
// Rbd-Dry-Run: true.
func (h *httpCall) DryRun(ctx context.Context, c *Call) (Result, error) {
	method, target, err := requestLine(h.deps, c)
	if err != nil {
		return Result{}, err
	}
	mode, _ := c.Params["dry_run"].(string)
	switch mode {
	case "head":
		cc := *c
		cc.Params = withParam(c.Params, "method", http.MethodHead)
		if _, err := send(ctx, h.deps, &cc, nil); err != nil {
			return Result{}, err
		}
		return Complete(map[string]any{"dry_run": true, "method": http.MethodHead, "url": redactURL(target), "reachable": true}), nil
	case "url":
		cc := *c
		cc.Params = withParam(c.Params, "url", c.Params["dry_run_url"])
		resp, err := send(ctx, h.deps, &cc, c.Args)
		if err != nil {
			return Result{}, err
		}
		return Complete(resp), nil
	}
	return Complete(map[string]any{"dry_run": true, "method": method, "url": redactURL(target)}), nil
}

// withParam is a copy of params with one of them replaced.
func withParam(params map[string]any, name string, value any) map[string]any {
	out := make(map[string]any, len(params)+1)
	for k, v := range params {
		out[k] = v
	}
	out[name] = value
	return out
}

// httpStart POSTs a task to an external system, with the correlation key
// and the callback address, then parks.
type httpStart struct{ deps BuiltinDeps }

func (h *httpStart) Call(ctx context.Context, c *Call) (Result, error) {
	body := map[string]any{
		"correlation_key": c.CorrelationKey,
		"callback_url":    c.CallbackURL,
		"args":            c.Args,
	}
	resp, err := send(ctx, h.deps, c, body)
	if err != nil {
		return Result{}, err
	}
	id, _ := resp["id"].(string)
	return Parked(id), nil
}

// Cancel asks the outside world to stop the work a start began: a POST to
// params.cancel_url naming the correlation key (also the request's
// Idempotency-Key, so a repeat is harmless), the invocation and the
// external id.
func (h *httpStart) Cancel(ctx context.Context, c *Call) (bool, error) {
	target, _ := c.Params["cancel_url"].(string)
	if target == "" {
		return false, nil
	}
	cc := *c
	cc.Params = map[string]any{"url": target, "method": http.MethodPost, "headers": c.Params["headers"]}
	cc.IdempotencyKey = c.CorrelationKey
	_, err := send(ctx, h.deps, &cc, map[string]any{
		"correlation_key": c.CorrelationKey, "invocation_id": c.InvocationID.String(), "external_id": c.ExternalID,
	})
	return true, err
}

// requestLine resolves the method and URL of a call.
func requestLine(deps BuiltinDeps, c *Call) (string, string, error) {
	method, _ := c.Params["method"].(string)
	if method == "" {
		method = http.MethodPost
	}
	raw, _ := c.Params["url"].(string)
	target, err := expandEnv(raw, deps.LookupEnv)
	return method, target, err
}

// send makes the request and decodes the response. Status codes map to the
// taxonomy as statusError says; a timeout is NETWORK_TIMEOUT and a refused
// connection DEPENDENCY_UNAVAILABLE.
func send(ctx context.Context, deps BuiltinDeps, c *Call, payload map[string]any) (map[string]any, error) {
	resp, _, err := sendFor(ctx, deps, c, payload)
	return resp, err
}

// sendFor is send, with the response's header.
func sendFor(ctx context.Context, deps BuiltinDeps, c *Call, payload map[string]any) (map[string]any, http.Header, error) {
	method, target, err := requestLine(deps, c)
	if err != nil {
		return nil, nil, err
	}
	ctx = withRedirects(ctx, c.Params)
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete || method == http.MethodHead {
		target, err = withQuery(target, payload)
		if err != nil {
			return nil, nil, err
		}
	} else {
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, nil, Errorf(rbtype.CodeInvalidInput, "arguments do not marshal to JSON: %v", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, nil, Errorf(rbtype.CodeInvalidInput, "bad request for %s: %v", redactURL(target), err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", c.IdempotencyKey)
	if c.DryRun {
		req.Header.Set("Rbd-Dry-Run", "true")
	}
	if headers, ok := c.Params["headers"].(map[string]any); ok {
		for name, v := range headers {
			s, _ := v.(string)
			value, err := expandEnv(s, deps.LookupEnv)
			if err != nil {
				return nil, nil, err
			}
			req.Header.Set(name, value)
		}
	}
	// The attempt's span, after the verb's own headers: the service joins
	// the runbook's trace (docs/design/semantics.md section 2).
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := deps.HTTP.Do(req)
	if refused, ok := redirectError(err, target); ok {
		return nil, nil, refused
	}
	if err != nil {
		return nil, nil, transportError(err, target)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	if err != nil {
		return nil, nil, transportError(err, target)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, statusError(resp.StatusCode, resp.Header, data, target)
	}
	return decodeResponse(data), resp.Header, nil
}

func withQuery(target string, payload map[string]any) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", Errorf(rbtype.CodeInvalidInput, "bad URL: %v", err)
	}
	q := u.Query()
	keys := make([]string, 0, len(payload))
	for k := range payload {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if q.Has(k) {
			// The verb's author fixed it in the URL; an argument may not
			// replace it (V004 when the verb's input_schema names it).
			return "", Errorf(rbtype.CodeInvalidInput, "argument %q would replace the query parameter %q that the verb's URL fixes", k, k)
		}
		switch v := payload[k].(type) {
		case string:
			q.Set(k, v)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return "", Errorf(rbtype.CodeInvalidInput, "argument %q does not encode as JSON: %v", k, err)
			}
			q.Set(k, string(b))
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// statusError maps a failed response to the taxonomy (docs/design/semantics.md
// section 12): 429 RATE_LIMIT, with the response's Retry-After; 408 and
// 504 NETWORK_TIMEOUT; 502, 503 and any other 5xx TEMPORARY_PROVIDER_ERROR (all
// retried); 401 and 403 AUTH_FORBIDDEN; 400, 422 and any other 4xx
// INVALID_INPUT (final). A 503 may carry a Retry-After too, and it is
// honoured the same way.
func statusError(status int, header http.Header, body []byte, target string) *Error {
	snippet := strings.TrimSpace(string(body))
	if len(snippet) > 200 {
		snippet = snippet[:200] + "…"
	}
	msg := fmt.Sprintf("%s answered %d %s", redactURL(target), status, http.StatusText(status))
	if snippet != "" {
		msg += ": " + snippet
	}
	e := &Error{Message: msg}
	switch {
	case status == http.StatusTooManyRequests:
		e.Code = rbtype.CodeRateLimit
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Code = rbtype.CodeNetworkTimeout
	case status >= 500:
		e.Code = rbtype.CodeTemporaryProviderError
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Code = rbtype.CodeAuthForbidden
	default:
		e.Code = rbtype.CodeInvalidInput
	}
	if e.Code.Retryable() {
		e.RetryAfter, e.RetryAt = parseRetryAfter(header.Get("Retry-After"))
	}
	return e
}

// parseRetryAfter reads a Retry-After header (RFC 9110 section 10.2.3):
// whole seconds, or an HTTP date. Anything else asks for nothing. A
// negative number is read as it says and comes to nothing; a huge one is
// capped by the retry policy, as is a date far off, and a date in the past
// asks for no wait.
func parseRetryAfter(v string) (time.Duration, time.Time) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, time.Time{}
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		const most = int64(math.MaxInt64 / int64(time.Second))
		return time.Duration(min(max(secs, 0), most)) * time.Second, time.Time{}
	}
	if at, err := http.ParseTime(v); err == nil {
		return 0, at
	}
	return 0, time.Time{}
}

// transportError words a request that failed before an answer. Its cause,
// which the log shows, names the URL as the request had it, query and all
// (a ${env:...} secret among it): the cause keeps the URL redacted as the
// message does.
func transportError(err error, target string) *Error {
	err = redactedCause(err)
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return &Error{Code: rbtype.CodeNetworkTimeout, Message: fmt.Sprintf("%s did not answer in time", redactURL(target)), Err: err}
	}
	return &Error{Code: rbtype.CodeDependencyUnavailable, Message: fmt.Sprintf("%s could not be reached", redactURL(target)), Err: err}
}

// decodeResponse makes a result of a response body: a JSON object as it
// is, other JSON under "value", anything else under "body".
func decodeResponse(data []byte) map[string]any {
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}
	}
	v, err := decodeJSON(data)
	if err != nil {
		return map[string]any{"body": string(data)}
	}
	if obj, ok := v.(map[string]any); ok {
		return obj
	}
	return map[string]any{"value": v}
}

// redactedCause is err with the URL of its *url.Error, if it has one,
// redacted; the error's other parts (a dial error's address, a TLS
// error) name no query.
func redactedCause(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: redactURL(ue.URL), Err: ue.Err}
}

// redactURL drops credentials and the query from a URL, for messages,
// and puts back the ${env:NAME} of any secret its path holds
// (url_secrets.go).
func redactURL(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return "the configured URL"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment, u.RawFragment = "", ""
	return redactSecrets(u.String())
}
