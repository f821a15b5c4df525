package builtin

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

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// maxResponseBody bounds what an HTTP handler reads of a response.
const maxResponseBody = 10 << 20

// requestLine resolves the method and URL of a call.
func requestLine(deps Deps, c *handler.Call) (string, string, error) {
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
func send(ctx context.Context, deps Deps, c *handler.Call, payload map[string]any) (map[string]any, error) {
	resp, _, err := sendFor(ctx, deps, c, payload)
	return resp, err
}

// sendFor is send, with the response's header.
func sendFor(ctx context.Context, deps Deps, c *handler.Call, payload map[string]any) (map[string]any, http.Header, error) {
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
			return nil, nil, handler.Errorf(rbtype.CodeInvalidInput, "arguments do not marshal to JSON: %v", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, nil, handler.Errorf(rbtype.CodeInvalidInput, "bad request for %s: %v", redactURL(target), err)
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
		return "", handler.Errorf(rbtype.CodeInvalidInput, "bad URL: %v", err)
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
			return "", handler.Errorf(rbtype.CodeInvalidInput, "argument %q would replace the query parameter %q that the verb's URL fixes", k, k)
		}
		switch v := payload[k].(type) {
		case string:
			q.Set(k, v)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return "", handler.Errorf(rbtype.CodeInvalidInput, "argument %q does not encode as JSON: %v", k, err)
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
func statusError(status int, header http.Header, body []byte, target string) *handler.Error {
	snippet := strings.TrimSpace(string(body))
	if len(snippet) > 200 {
		snippet = snippet[:200] + "…"
	}
	msg := fmt.Sprintf("%s answered %d %s", redactURL(target), status, http.StatusText(status))
	if snippet != "" {
		msg += ": " + snippet
	}
	e := &handler.Error{Message: msg}
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
func transportError(err error, target string) *handler.Error {
	err = redactedCause(err)
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return &handler.Error{Code: rbtype.CodeNetworkTimeout, Message: fmt.Sprintf("%s did not answer in time", redactURL(target)), Err: err}
	}
	return &handler.Error{Code: rbtype.CodeDependencyUnavailable, Message: fmt.Sprintf("%s could not be reached", redactURL(target)), Err: err}
}

// decodeResponse makes a result of a response body: a JSON object as it
// is, other JSON under "value", anything else under "body".
func decodeResponse(data []byte) map[string]any {
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}
	}
	v, err := rbtype.DecodeJSON(data)
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
