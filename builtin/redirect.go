package builtin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// Redirects of http.call and http.start (docs/daemon.md, "http.call's
// redirects"). Go's client follows any redirect by default, to any host:
// a POST then arrives elsewhere as a GET, carrying the verb's own headers,
// its secrets among them. A call follows none unless its verb's
// params.redirects is same_host, and then only those to the URL's own
// scheme and host, at most maxRedirects of them.

// The values of params.redirects.
const (
	redirectsNone     = "none"
	redirectsSameHost = "same_host"
)

const maxRedirects = 10

type redirectsKey struct{}

// withRedirects is ctx carrying the redirects a call's verb allows, for
// the client's CheckRedirect to read from the request.
func withRedirects(ctx context.Context, params map[string]any) context.Context {
	allowed, _ := params["redirects"].(string)
	return context.WithValue(ctx, redirectsKey{}, allowed)
}

// errRedirectRefused is a redirect the call's verb does not allow.
type errRedirectRefused struct {
	to, why string
}

func (e *errRedirectRefused) Error() string { return "refused a redirect to " + e.to + ": " + e.why }

// checkRedirect is the http.Client's CheckRedirect for the built-in
// handlers. It follows a redirect only to the call's own scheme and host,
// with the verb's params.redirects: same_host, keeping the method.
func checkRedirect(req *http.Request, via []*http.Request) error {
	allowed, _ := req.Context().Value(redirectsKey{}).(string)
	first := via[0].URL
	to := redactURL(req.URL.String())
	switch {
	case allowed != redirectsSameHost:
		return &errRedirectRefused{to: to, why: "the verb follows no redirects (params.redirects: same_host allows those to its own host)"}
	case req.URL.Scheme != first.Scheme || req.URL.Host != first.Host:
		return &errRedirectRefused{to: to, why: fmt.Sprintf("it is not %s://%s, the verb's own host; http.call never follows a redirect to another host", first.Scheme, first.Host)}
	case len(via) >= maxRedirects:
		return &errRedirectRefused{to: to, why: fmt.Sprintf("after %d redirects", len(via))}
	case req.Method != via[len(via)-1].Method:
		// 301, 302 and 303 turn a POST (PUT, PATCH, DELETE) into a GET
		// without its body: followed, the step would complete on a GET
		// that did not do what the verb asks. Only 307 and 308 keep the
		// method and body (docs/verbs.md).
		status := 0
		if req.Response != nil {
			status = req.Response.StatusCode
		}
		return &errRedirectRefused{to: to, why: fmt.Sprintf("a %d would turn the %s into a %s; only 307 and 308 keep the method and body",
			status, via[len(via)-1].Method, req.Method)}
	}
	return nil
}

// redirectError words a refused redirect as the step's failure: final,
// since the next attempt would be redirected alike.
func redirectError(err error, target string) (*handler.Error, bool) {
	var refused *errRedirectRefused
	if !errors.As(err, &refused) {
		return nil, false
	}
	return &handler.Error{Code: rbtype.CodePolicyDenied, Message: fmt.Sprintf("%s answered with a redirect, which was not followed: %v", redactURL(target), refused)}, true
}

// withRedirectCheck is a copy of client that follows redirects as
// checkRedirect allows.
func withRedirectCheck(client *http.Client) *http.Client {
	c := *client
	c.CheckRedirect = checkRedirect
	return &c
}
