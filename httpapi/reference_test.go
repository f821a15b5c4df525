package httpapi_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/httpapi"
)

// TestHTTPReferenceCoversEveryRoute fails when a route is registered that
// docs/reference/http-api.md does not document, when the page documents
// one that is not a route, or when it leaves out an error code.
func TestHTTPReferenceCoversEveryRoute(t *testing.T) {
	raw, err := os.ReadFile("../docs/reference/http-api.md")
	require.NoError(t, err)
	page := string(raw)

	var routes, documented []string
	for _, r := range httpapi.New(httpapi.Config{}).Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	for _, m := range regexp.MustCompile("(?m)^### `([A-Z]+ /[^`]*)`$").FindAllStringSubmatch(page, -1) {
		documented = append(documented, m[1])
	}
	require.ElementsMatch(t, routes, documented, "the sections of http-api.md are not the server's routes")

	roles := httpapi.RouteRoles()
	for _, route := range routes {
		section := page[strings.Index(page, "### `"+route+"`\n"):]
		if end := regexp.MustCompile("(?m)^##").FindAllStringIndex(section, 2); len(end) == 2 {
			section = section[:end[1][0]]
		}
		role, needs := roles[route]
		if needs {
			require.Contains(t, section, "Role: `"+string(role)+"`.", "http-api.md: %s needs the role %s", route, role)
		} else {
			require.NotContains(t, section, "Role: ", "http-api.md: %s needs no role", route)
		}
	}

	for _, code := range apiErrorCodes(t) {
		row := regexp.MustCompile("(?m)^\\| `" + code + "` \\| [0-9]{3} \\|")
		require.True(t, row.MatchString(page), "http-api.md's table of errors has no row for %s", code)
	}
}
