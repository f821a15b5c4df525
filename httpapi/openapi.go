package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"gopkg.in/yaml.v3"
)

// openapiYAML is the OpenAPI 3.1 description of this API, written by
// hand next to the handlers it describes. TestOpenAPIMatchesRoutes keeps
// its paths and methods equal to the server's routes.
//
//go:embed openapi.yaml
var openapiYAML []byte

// OpenAPI returns the API's OpenAPI 3.1 document as JSON, as GET
// /v1/openapi.json serves it.
func OpenAPI() ([]byte, error) { return openapiJSON() }

// openapiJSON converts the document once.
var openapiJSON = sync.OnceValues(func() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(openapiYAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	return append(b, '\n'), nil
})

// openapi is GET /v1/openapi.json: the document, public like /healthz,
// since it says nothing about any runbook.
func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) error {
	doc, err := OpenAPI()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
	return nil
}
