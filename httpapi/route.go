package httpapi

import "slices"

// Route is one endpoint of the API: a method and a path pattern, with
// wildcards in braces as net/http.ServeMux writes them
// (/v1/runbooks/{id}).
type Route struct {
	Method string
	Path   string
}

// Routes lists the API's endpoints in the order they are registered: the
// table the OpenAPI document and docs/reference/http-api.md are checked
// against. The console's /ui/ and the JSON answers for unknown paths and
// wrong methods are not endpoints and are not listed.
func (s *Server) Routes() []Route { return slices.Clone(s.table) }
