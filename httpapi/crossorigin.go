package httpapi

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// reasonCrossOrigin counts requests refused by crossOrigin.
const reasonCrossOrigin = "cross_origin"

// crossOrigin says why a request to a token-checked route of an open
// daemon (no --api-token-file) looks like a web page's, or "" when it does
// not (docs/daemon.md, "The HTTP server"). Without tokens, a page open in a
// developer's browser could otherwise POST to the daemon on 127.0.0.1: a
// "simple" request (text/plain, a form) is sent without a CORS preflight,
// and it would submit, approve or cancel. So a request that changes
// something is refused when its Origin is another site's (or the browser
// says it is cross-site), and when its body is not declared JSON; a
// request without Content-Type (scripts, most clients) is let through. GET
// and HEAD change nothing, and their answers are not readable across
// origins without CORS, which rbd never grants.
func crossOrigin(r *http.Request) string {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return ""
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "its Origin " + origin + " is another site's"
		}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return "the browser says it comes from another site"
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		media, _, err := mime.ParseMediaType(ct)
		if err != nil || media != "application/json" && !strings.HasSuffix(media, "+json") {
			return "its body is " + ct + ", not application/json"
		}
	}
	return ""
}
