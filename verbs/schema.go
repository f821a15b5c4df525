package verbs

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a verb's input_schema or output_schema: JSON Schema draft
// 2020-12 plus `type: uuid`, a string in canonical UUID form.
//
// Two choices differ from plain JSON Schema, both so that a typo is caught
// rather than ignored:
//   - An input_schema that lists properties is closed: an argument it does
//     not list is an error (E021) unless additionalProperties says otherwise.
//   - format is asserted, not just annotated.
type Schema struct {
	raw   map[string]any // as written, with type: uuid
	root  *jsonschema.Schema
	props map[string]*jsonschema.Schema
	// typeOnly are the properties whose whole schema is {type: T} with T
	// one of JSON's types: a value of type T passes them without the
	// library (ValidateProperty).
	typeOnly map[string]string
}

// SchemaRole says which of a verb's schemas a Schema is.
type SchemaRole int

const (
	// InputRole is an input_schema: closed by default.
	InputRole SchemaRole = iota
	// OutputRole is an output_schema: open, since results often carry more
	// than they declare.
	OutputRole
)

// SchemaError is a problem in a schema, with the JSON pointer of the place
// inside the schema document where it lies.
type SchemaError struct {
	Pointer string
	Message string
}

func (e *SchemaError) Error() string {
	if e.Pointer == "" {
		return e.Message
	}
	return fmt.Sprintf("at %s: %s", e.Pointer, e.Message)
}

// CompileSchema compiles raw, a schema as plain JSON values. name only
// labels the schema in error messages.
func CompileSchema(name string, raw map[string]any, role SchemaRole) (*Schema, error) {
	doc := rewriteUUID(raw).(map[string]any)
	if role == InputRole {
		if _, ok := doc["properties"]; ok {
			if _, set := doc["additionalProperties"]; !set {
				doc["additionalProperties"] = false
			}
		}
	}
	c := jsonschema.NewCompiler()
	// The library would read file:// references from the local disk. A
	// schema comes from a verb file or from a submitted plan, and neither
	// may make the daemon read its files: schemas are self-contained.
	c.UseLoader(selfContained{})
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	loc := "mem:///" + url.PathEscape(name) + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, &SchemaError{Message: err.Error()}
	}
	root, err := c.Compile(loc)
	if err != nil {
		return nil, schemaError(err)
	}
	s := &Schema{raw: raw, root: root, props: map[string]*jsonschema.Schema{}}
	if props, ok := raw["properties"].(map[string]any); ok {
		for p := range props {
			sub, err := c.Compile(loc + "#/properties/" + escapePointer(p))
			if err != nil {
				return nil, schemaError(err)
			}
			s.props[p] = sub
			if t, ok := typeOnlySchema(props[p]); ok {
				if s.typeOnly == nil {
					s.typeOnly = map[string]string{}
				}
				s.typeOnly[p] = t
			}
		}
	}
	return s, nil
}

// typeOnlySchema reports whether a property's schema is {type: T} and
// nothing else, T one of JSON's own types, and which.
func typeOnlySchema(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	t, ok := m["type"].(string)
	switch t {
	case "string", "integer", "number", "boolean", "null", "object", "array":
		return t, ok
	}
	return "", false
}

// hasJSONType reports whether v, a plan value (json.Number for numbers),
// is plainly of JSON type t. false means "not known here": the library
// decides, and says why a value fails.
func hasJSONType(t string, v any) bool {
	switch v := v.(type) {
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case nil:
		return t == "null"
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	case json.Number:
		switch t {
		case "number":
			_, err := v.Float64()
			return err == nil
		case "integer":
			return isIntegerLiteral(string(v))
		}
	}
	return false
}

// isIntegerLiteral reports whether s is an optional minus and digits.
func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// selfContained loads no schema from outside the one being compiled.
type selfContained struct{}

func (selfContained) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is outside the schema; a verb's schemas must be self-contained", url)
}

// schemaError extracts the innermost complaint of a metaschema failure and
// where it points.
func schemaError(err error) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			leaf := ve
			for len(leaf.Causes) > 0 {
				leaf = leaf.Causes[0]
			}
			return &SchemaError{Pointer: pointer(leaf.InstanceLocation), Message: leafMessage(leaf)}
		}
	}
	return &SchemaError{Message: err.Error()}
}

// leafMessage is the library's own wording for one failed keyword, without
// the location prefix it adds.
func leafMessage(ve *jsonschema.ValidationError) string {
	return ve.ErrorKind.LocalizedString(englishPrinter)
}

var englishPrinter = message.NewPrinter(language.English)

func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	escaped := make([]string, len(tokens))
	for i, t := range tokens {
		escaped[i] = escapePointer(t)
	}
	return "/" + strings.Join(escaped, "/")
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// rewriteUUID returns a copy of a schema value with every `type: uuid`
// turned into a string with `format: uuid`. It does not descend into
// keywords whose values are data, not schemas.
func rewriteUUID(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			switch k {
			case "enum", "const", "default", "examples":
				out[k] = val
			default:
				out[k] = rewriteUUID(val)
			}
		}
		if isUUIDType(v["type"]) {
			out["type"] = replaceUUID(v["type"])
			if _, has := v["format"]; !has {
				out["format"] = "uuid"
			} else {
				allOf, _ := out["allOf"].([]any)
				out["allOf"] = append(slices.Clone(allOf), map[string]any{"format": "uuid"})
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = rewriteUUID(item)
		}
		return out
	}
	return v
}

func isUUIDType(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "uuid"
	case []any:
		return slices.Contains(t, any("uuid"))
	}
	return false
}

func replaceUUID(t any) any {
	if s, ok := t.(string); ok && s == "uuid" {
		return "string"
	}
	list := t.([]any)
	out := make([]any, 0, len(list))
	for _, item := range list {
		if item == "uuid" {
			item = "string"
		}
		if !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	return out
}

// MarshalJSON writes the schema as written.
func (s *Schema) MarshalJSON() ([]byte, error) { return json.Marshal(s.raw) }

// Raw returns the schema as written. Callers must not modify it.
func (s *Schema) Raw() map[string]any { return s.raw }

// Validate checks a whole value, such as a step's resolved arguments.
func (s *Schema) Validate(v any) error { return validationError(s.root.Validate(v)) }

// ValidateProperty checks one argument against its property's schema.
// A property the schema does not list passes.
func (s *Schema) ValidateProperty(name string, v any) error {
	sub, ok := s.props[name]
	if !ok {
		return nil
	}
	// A property declared by its type alone ({type: integer}) needs no
	// walk of the library's schema for a value plainly of that type: the
	// compiler validates every literal argument of every step so.
	if t, ok := s.typeOnly[name]; ok && hasJSONType(t, v) {
		return nil
	}
	return validationError(sub.Validate(v))
}

// validationError shortens the library's error tree to its leaves, which
// say what is wrong in terms a runbook author knows.
func validationError(err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var msgs []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msg := leafMessage(e)
			if loc := pointer(e.InstanceLocation); loc != "" {
				msg = "at " + loc + ": " + msg
			}
			msgs = append(msgs, msg)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(msgs)
	return errors.New(strings.Join(slices.Compact(msgs), "; "))
}

// Properties lists the property names, sorted.
func (s *Schema) Properties() []string {
	props, _ := s.raw["properties"].(map[string]any)
	return slices.Sorted(maps.Keys(props))
}

// Property returns a property's schema as written.
func (s *Schema) Property(name string) (map[string]any, bool) {
	return Field(s.raw, name)
}

// Required lists the required properties in the order written.
func (s *Schema) Required() []string {
	var out []string
	list, _ := s.raw["required"].([]any)
	for _, r := range list {
		if name, ok := r.(string); ok {
			out = append(out, name)
		}
	}
	return out
}

// Closed reports whether names outside Properties are refused.
func (s *Schema) Closed() bool { return IsClosed(s.raw) }

// IsClosed reports whether an object schema refuses names it does not list:
// it lists properties and does not allow others explicitly.
func IsClosed(sub map[string]any) bool {
	if _, ok := sub["properties"].(map[string]any); !ok {
		return false
	}
	switch ap := sub["additionalProperties"].(type) {
	case nil:
		return true
	case bool:
		return !ap
	}
	return false // a schema for additional properties allows them
}

// Field returns the schema of property name inside an object schema.
func Field(sub map[string]any, name string) (map[string]any, bool) {
	props, _ := sub["properties"].(map[string]any)
	p, ok := props[name].(map[string]any)
	if !ok {
		if b, isBool := props[name].(bool); isBool && b {
			return map[string]any{}, true
		}
	}
	return p, ok
}

// Items returns the schema of element i of an array schema, or nil when the
// schema does not say.
func Items(sub map[string]any, i int) map[string]any {
	if prefix, ok := sub["prefixItems"].([]any); ok && i < len(prefix) {
		p, _ := prefix[i].(map[string]any)
		return p
	}
	items, _ := sub["items"].(map[string]any)
	return items
}

// Types returns the JSON types a schema admits, "uuid" folded into
// "string", sorted; nil means any type. The compiler uses it to compare a
// reference's type with a parameter's.
func Types(sub map[string]any) []string {
	if sub == nil {
		return nil
	}
	var out []string
	switch t := sub["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, item := range t {
			if s, ok := item.(string); ok {
				out = append(out, s)
			}
		}
	default:
		if c, ok := sub["const"]; ok {
			out = []string{JSONType(c)}
		} else if enum, ok := sub["enum"].([]any); ok {
			for _, e := range enum {
				out = append(out, JSONType(e))
			}
		} else {
			return nil
		}
	}
	for i, t := range out {
		if t == "uuid" {
			out[i] = "string"
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// IsUUID reports whether a schema is `type: uuid`.
func IsUUID(sub map[string]any) bool { return sub != nil && sub["type"] == "uuid" }

// JSONType names the JSON type of a decoded JSON value. Integral numbers
// are "integer".
func JSONType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case int, int64:
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// TypeAdmits reports whether a value of JSON type have may be given where a
// schema admits want. An integer is a number.
func TypeAdmits(want []string, have string) bool {
	if want == nil {
		return true
	}
	for _, w := range want {
		if w == have || (w == "number" && have == "integer") {
			return true
		}
	}
	return false
}
