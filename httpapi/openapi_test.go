package httpapi_test

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/rbtype"
)

// openapiDoc fetches the document as a client would: without a token from
// a server that requires one, since it is public.
func openapiDoc(t *testing.T) (*httpapi.Server, map[string]any) {
	t.Helper()
	srv := httpapi.New(httpapi.Config{Tokens: []string{"secret"}})
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	require.Equal(t, "3.1.0", doc["openapi"])
	return srv, doc
}

var operationMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	srv, doc := openapiDoc(t)
	var documented []string
	paths, ok := doc["paths"].(map[string]any)
	require.True(t, ok, "paths is an object")
	for path, item := range paths {
		for method := range item.(map[string]any) {
			if slices.Contains(operationMethods, method) {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	var routes []string
	for _, r := range srv.Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	slices.Sort(documented)
	slices.Sort(routes)
	require.Equal(t, routes, documented, "openapi.yaml's operations are not the server's routes")
}

// TestOpenAPIRoles checks that each operation names, as x-rbd-role, the
// role its route needs, and answers 403 when it needs one.
func TestOpenAPIRoles(t *testing.T) {
	_, doc := openapiDoc(t)
	roles := httpapi.RouteRoles()
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			op := op.(map[string]any)
			route := strings.ToUpper(method) + " " + path
			want, needs := roles[route]
			got, _ := op["x-rbd-role"].(string)
			require.Equal(t, string(want), got, "%s: x-rbd-role", route)
			_, forbidden := op["responses"].(map[string]any)["403"]
			require.Equal(t, needs, forbidden, "%s: a 403 answer exactly when the route needs a role", route)
		}
	}
}

// TestOpenAPIIsValid checks the document against the OpenAPI 3.1
// specification with kin-openapi's validator: its objects, fields, $refs,
// parameters and schemas.
func TestOpenAPIIsValid(t *testing.T) {
	raw, err := httpapi.OpenAPI()
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	require.True(t, doc.IsOpenAPI31OrLater(), "the document says openapi %q", doc.OpenAPI)
	require.NoError(t, doc.Validate(context.Background()))
}

// TestOpenAPIIsWellFormed checks what the validator does not: every $ref
// resolves, every path wildcard is a declared path parameter, every
// operation has an id and answers something, and the enums copy the Go
// values they describe.
func TestOpenAPIIsWellFormed(t *testing.T) {
	_, doc := openapiDoc(t)
	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				refs = append(refs, ref)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	require.NotEmpty(t, refs)
	for _, ref := range refs {
		require.True(t, strings.HasPrefix(ref, "#/"), "%s is not local", ref)
		_, ok := lookup(doc, ref)
		require.True(t, ok, "%s does not resolve", ref)
	}

	wildcard := regexp.MustCompile(`\{([a-z]+)\}`)
	for path, item := range doc["paths"].(map[string]any) {
		var want []string
		for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
			want = append(want, m[1])
		}
		for method, op := range item.(map[string]any) {
			op := op.(map[string]any)
			require.NotEmpty(t, op["responses"], "%s %s answers nothing", method, path)
			require.NotEmpty(t, op["operationId"], "%s %s has no operationId", method, path)
			var got []string
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				p := p.(map[string]any)
				if ref, ok := p["$ref"].(string); ok {
					resolved, _ := lookup(doc, ref)
					p = resolved.(map[string]any)
				}
				if p["in"] == "path" {
					require.Equal(t, true, p["required"], "%s %s: path parameter %s must be required", method, path, p["name"])
					got = append(got, p["name"].(string))
				}
			}
			require.ElementsMatch(t, want, got, "%s %s: path parameters", method, path)
		}
	}

	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	enum := func(name string) []string {
		var out []string
		for _, v := range schemas[name].(map[string]any)["enum"].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	var statuses []string
	for _, s := range rbtype.RunbookStatuses {
		statuses = append(statuses, string(s))
	}
	require.ElementsMatch(t, statuses, enum("RunbookStatus"))
	require.ElementsMatch(t, []string{string(rbtype.ModeExecute), string(rbtype.ModeDryRun), string(rbtype.ModeDraftOnly)}, enum("Mode"))

	var codes []any
	errorProps := schemas["ErrorBody"].(map[string]any)["properties"].(map[string]any)["error"].(map[string]any)["properties"].(map[string]any)
	codes = errorProps["code"].(map[string]any)["enum"].([]any)
	var got []string
	for _, c := range codes {
		got = append(got, c.(string))
	}
	require.ElementsMatch(t, apiErrorCodes(t), got, "the ErrorBody code enum is not errors.go's codes")
}

// apiErrorCodes reads the error codes the API answers with from the
// package's source (the Code constants), so a new one cannot be left out
// of the document or the reference.
func apiErrorCodes(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "errors.go", nil, 0)
	require.NoError(t, err)
	var codes []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if strings.HasPrefix(name.Name, "Code") && ok && lit.Kind == token.STRING {
					code, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					codes = append(codes, code)
				}
			}
		}
	}
	require.Contains(t, codes, httpapi.CodeNotFound, "no error codes found in errors.go")
	return codes
}

// lookup follows a local JSON pointer (#/a/b) through doc.
func lookup(doc map[string]any, ref string) (any, bool) {
	var cur any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}
