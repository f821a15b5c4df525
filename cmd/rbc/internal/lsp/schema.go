package lsp

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// parseRef splits a reference as written ("@docs.files[0].url") into
// its binding's name and its path. Lang's scanner has checked complete
// references; this also reads the start of one being typed, and stops at
// what it cannot read.
func parseRef(ref string) (name string, path []lang.PathStep) {
	name = refName(ref)
	s := strings.TrimPrefix(ref, "@")[len(name):]
	for s != "" {
		switch s[0] {
		case '.':
			end := strings.IndexAny(s[1:], ".[")
			if end < 0 {
				end = len(s) - 1
			}
			path = append(path, lang.PathStep{Field: s[1 : end+1]})
			s = s[end+1:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return name, path
			}
			n, err := strconv.Atoi(s[1:end])
			if err != nil {
				return name, path
			}
			path = append(path, lang.PathStep{Index: n, IsIndex: true})
			s = s[end+1:]
		default:
			return name, path
		}
	}
	return name, path
}

// schemaAt follows a reference path through an output schema and returns
// the schema of what it reaches, nil when the schema does not say. The
// compiler has reported a path the schema rules out; here such a path
// just reaches nothing.
func schemaAt(schema *verbs.Schema, path []lang.PathStep) map[string]any {
	if schema == nil {
		return nil
	}
	return rawSchemaAt(schema.Raw(), path)
}

// rawSchemaAt is schemaAt for a schema as a map.
func rawSchemaAt(cur map[string]any, path []lang.PathStep) map[string]any {
	for _, p := range path {
		if cur == nil {
			return nil
		}
		if p.IsIndex {
			cur = verbs.Items(cur, p.Index)
			continue
		}
		field, ok := verbs.Field(cur, p.Field)
		if !ok {
			field, _ = cur["additionalProperties"].(map[string]any)
		}
		cur = field
	}
	return cur
}

// fields lists an object schema's properties, sorted.
func fields(sub map[string]any) []string {
	props, _ := sub["properties"].(map[string]any)
	return slices.Sorted(maps.Keys(props))
}

// typeOf describes a schema's type for a person: "uuid", "string (email)",
// "array of string", "integer | null", or "any".
func typeOf(sub map[string]any) string {
	var t string
	switch v := sub["type"].(type) {
	case string:
		t = v
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = fmt.Sprint(p)
		}
		t = strings.Join(parts, " | ")
	default:
		return "any"
	}
	if t == "array" {
		if items, ok := sub["items"].(map[string]any); ok {
			t += " of " + typeOf(items)
		}
	}
	if f, ok := sub["format"].(string); ok {
		t += " (" + f + ")"
	}
	return t
}
