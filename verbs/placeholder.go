package verbs

import (
	"maps"
	"strings"
)

// placeholderDepth bounds how deep Placeholder follows nested schemas: a
// schema is bounded in size, but a placeholder need not be deep to be
// read, and a deeper one would only cost memory.
const placeholderDepth = 16

// Placeholder is a value shaped by the schema, for a dry run's step whose
// handler returned no real result (docs/reference/cli.md, "--dry-run"):
// an object holds each required property (fields not required are
// absent), each value of its declared type, its const, or its first enum
// value; strings of a known format are valid of that format. Later steps
// of the dry run can read it as they would read the real result. It is
// not checked against the schema: a pattern or a combination the
// placeholder does not satisfy is the dry run's business, not a failure.
func (s *Schema) Placeholder() any {
	if s == nil {
		return map[string]any{}
	}
	return placeholderOf(s.raw, placeholderDepth)
}

func placeholderOf(sub map[string]any, depth int) any {
	if v, ok := sub["const"]; ok {
		return v
	}
	if list, ok := sub["enum"].([]any); ok && len(list) > 0 {
		return list[0]
	}
	if v, ok := sub["default"]; ok {
		return v
	}
	if depth == 0 {
		return nil
	}
	for _, key := range []string{"oneOf", "anyOf", "allOf"} {
		if alts, ok := sub[key].([]any); ok && len(alts) > 0 && sub["type"] == nil && sub["properties"] == nil {
			if first, ok := alts[0].(map[string]any); ok {
				return placeholderOf(first, depth-1)
			}
		}
	}
	switch placeholderType(sub) {
	case "object":
		out := map[string]any{}
		props, _ := sub["properties"].(map[string]any)
		required, _ := sub["required"].([]any)
		for _, r := range required {
			name, ok := r.(string)
			if !ok {
				continue
			}
			if p, ok := props[name].(map[string]any); ok {
				out[name] = placeholderOf(p, depth-1)
			} else {
				out[name] = "dry-run"
			}
		}
		return out
	case "array":
		n := 0
		if m, ok := number(sub["minItems"]); ok && m > 0 {
			n = min(int(m), 3)
		}
		out := make([]any, 0, n)
		items, _ := sub["items"].(map[string]any)
		for range n {
			out = append(out, placeholderOf(items, depth-1))
		}
		return out
	case "integer":
		return boundedNumber(sub, true)
	case "number":
		return boundedNumber(sub, false)
	case "boolean":
		return false
	case "null":
		return nil
	case "string":
		return placeholderString(sub)
	case "uuid":
		return "00000000-0000-0000-0000-000000000000"
	}
	if _, ok := sub["properties"]; ok {
		return placeholderOf(withType(sub, "object"), depth)
	}
	return nil
}

// placeholderType is the schema's type; of a list of types, the first
// that is not null.
func placeholderType(sub map[string]any) string {
	switch t := sub["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				return s
			}
		}
		if len(t) > 0 {
			return "null"
		}
	}
	return ""
}

func withType(sub map[string]any, t string) map[string]any {
	out := maps.Clone(sub)
	out["type"] = t
	return out
}

// boundedNumber is 0, or the nearest value the bounds allow.
func boundedNumber(sub map[string]any, integer bool) any {
	v := 0.0
	if m, ok := number(sub["minimum"]); ok && v < m {
		v = m
	}
	if m, ok := number(sub["exclusiveMinimum"]); ok && v <= m {
		v = m + 1
	}
	if m, ok := number(sub["maximum"]); ok && v > m {
		v = m
	}
	if m, ok := number(sub["exclusiveMaximum"]); ok && v >= m {
		v = m - 1
	}
	if integer {
		return int64(v)
	}
	return v
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// placeholderFormats are valid values of the formats a schema may assert.
var placeholderFormats = map[string]string{
	"date-time":     "1970-01-01T00:00:00Z",
	"date":          "1970-01-01",
	"time":          "00:00:00Z",
	"duration":      "PT0S",
	"email":         "dry-run@example.invalid",
	"idn-email":     "dry-run@example.invalid",
	"hostname":      "dry-run.example.invalid",
	"idn-hostname":  "dry-run.example.invalid",
	"ipv4":          "192.0.2.1",
	"ipv6":          "2001:db8::1",
	"uri":           "https://dry-run.example.invalid/",
	"iri":           "https://dry-run.example.invalid/",
	"uri-reference": "https://dry-run.example.invalid/",
	"iri-reference": "https://dry-run.example.invalid/",
	"url":           "https://dry-run.example.invalid/",
	"uuid":          "00000000-0000-0000-0000-000000000000",
	"json-pointer":  "/dry-run",
}

func placeholderString(sub map[string]any) string {
	if f, ok := sub["format"].(string); ok {
		if v, ok := placeholderFormats[f]; ok {
			return v
		}
	}
	v := "dry-run"
	if m, ok := number(sub["maxLength"]); ok && int(m) < len(v) {
		v = v[:max(int(m), 0)]
	}
	if m, ok := number(sub["minLength"]); ok && int(m) > len(v) {
		v += strings.Repeat("x", min(int(m), 1024)-len(v))
	}
	return v
}
