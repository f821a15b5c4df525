package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/httpapi/console"
)

// TestHandlerHeaders checks that every file goes out with the headers
// that keep a browser strict about it.
func TestHandlerHeaders(t *testing.T) {
	h := console.Handler()
	for path, ctype := range map[string]string{
		"/ui/": "text/html", "/ui/console.js": "text/javascript", "/ui/console.css": "text/css", "/ui/schedules.js": "text/javascript",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		require.Contains(t, rec.Header().Get("Content-Type"), ctype, path)
		require.Equal(t, console.ContentSecurityPolicy, rec.Header().Get("Content-Security-Policy"), path)
		require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"), path)
		require.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"), path)
	}
	require.NotContains(t, console.ContentSecurityPolicy, "unsafe")
	require.Contains(t, console.ContentSecurityPolicy, "frame-ancestors 'none'")
}

// TestNoInlineCodeNorHTMLFromData keeps the files within what the policy
// allows, and the script to building the DOM from text: a step key or a
// result is data that whoever submitted the runbook chose.
func TestNoInlineCodeNorHTMLFromData(t *testing.T) {
	html, err := os.ReadFile("static/index.html")
	require.NoError(t, err)
	require.NotRegexp(t, regexp.MustCompile(`<script>|<script [^>]*>[^<]|<style|style=|\son[a-z]+=`), string(html))
	for _, file := range []string{"static/console.js", "static/schedules.js"} {
		js, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, banned := range []string{".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			require.NotContains(t, string(js), banned, file)
		}
		// The token goes in a header only.
		require.NotContains(t, string(js), "document.cookie", file)
		require.NotContains(t, string(js), "localStorage", file)
	}
	resp := httptest.NewRecorder()
	console.Handler().ServeHTTP(resp, httptest.NewRequest(http.MethodGet, "/ui/console.js", nil))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(body), "// rbd console"), "the embedded script is the file in static/")
}
