package verbs

import (
	"errors"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
)

// schemaKeywords are the keywords of JSON Schema draft 2020-12 (and the
// draft-07 "definitions", still common). JSON Schema ignores any other key;
// the loader refuses them, so `requird:` is a diagnostic, not a silently
// optional argument.
var schemaKeywords = []string{
	"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
	"prefixItems", "items", "contains", "additionalProperties", "properties", "patternProperties",
	"dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not",
	"unevaluatedItems", "unevaluatedProperties",
	"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
	"maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
	"maxProperties", "minProperties", "required", "dependentRequired",
	"title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
	"format", "contentEncoding", "contentMediaType", "contentSchema", "definitions",
}

// Keywords whose values hold subschemas, by shape.
var (
	schemaMapKeywords    = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaSingleKeywords = []string{"items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	schemaListKeywords   = []string{"prefixItems", "allOf", "anyOf", "oneOf"}
)

// schema reads and compiles one of a definition's schemas, reporting V005
// at the node the problem is in.
func (d *decoder) schema(n *yaml.Node, def *Definition, path string, role SchemaRole) *Schema {
	index := map[string]*yaml.Node{}
	raw, ok := d.jsonObject(n, path, index)
	if !ok || !d.checkKeywords(n, path, 0) {
		return nil
	}
	s, err := CompileSchema(def.FullName()+"/"+path, raw, role)
	if err != nil {
		var se *SchemaError
		at := n
		msg := err.Error()
		if errors.As(err, &se) {
			msg = se.Message
			if node, ok := index[se.Pointer]; ok {
				at = node
			}
		}
		d.diags.Errorf(lang.VBadSchema, d.src.rangeOf(at), "invalid %s: %s", path, msg)
		return nil
	}
	return s
}

// checkKeywords reports unknown keywords in a schema object and in every
// subschema below it.
func (d *decoder) checkKeywords(n *yaml.Node, path string, depth int) bool {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode || depth > maxYAMLDepth {
		return true // boolean schemas; too deep is reported by toJSON
	}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], resolveAlias(n.Content[i+1])
		switch {
		case slices.Contains(schemaMapKeywords, key.Value):
			for j := 0; value.Kind == yaml.MappingNode && j+1 < len(value.Content); j += 2 {
				ok = d.checkKeywords(value.Content[j+1], path, depth+1) && ok
			}
		case slices.Contains(schemaSingleKeywords, key.Value):
			ok = d.checkKeywords(value, path, depth+1) && ok
		case slices.Contains(schemaListKeywords, key.Value):
			for _, item := range value.Content {
				ok = d.checkKeywords(item, path, depth+1) && ok
			}
		case slices.Contains(schemaKeywords, key.Value), strings.HasPrefix(key.Value, "x-"):
		default:
			diag := d.diags.Errorf(lang.VBadSchema, d.src.rangeOf(key), "unknown JSON Schema keyword %q in %s", key.Value, path)
			if close := lang.Suggest(key.Value, schemaKeywords); len(close) > 0 {
				diag.WithSuggestions(close...)
			} else if depth == 0 {
				diag.WithNote("arguments are declared under properties:")
			}
			ok = false
		}
	}
	return ok
}
