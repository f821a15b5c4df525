package verbs

import (
	"encoding/json"
	"testing"
)

// A placeholder has each required field typed as declared, no field that
// is not required, and passes the schema it was built from.
func TestPlaceholderMatchesTheSchema(t *testing.T) {
	raw := map[string]any{}
	if err := json.Unmarshal([]byte(`{
		"required": ["id", "at", "n", "score", "ok", "tags", "who", "sev", "kind", "owner", "nested"],
		"properties": {
			"id": {"type": "uuid"},
			"at": {"type": "string", "format": "date-time"},
			"n": {"type": "integer", "minimum": 3},
			"score": {"type": "number", "exclusiveMaximum": -1},
			"ok": {"type": "boolean"},
			"tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
			"who": {"type": "string", "format": "email"},
			"sev": {"type": "string", "enum": ["sev1", "sev2"]},
			"kind": {"const": "k"},
			"owner": {"type": ["null", "string"], "minLength": 10},
			"nested": {"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}, "y": {"type": "string"}}},
			"optional": {"type": "string"}
		}
	}`), &raw); err != nil {
		t.Fatal(err)
	}
	s, err := CompileSchema("out", raw, OutputRole)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Placeholder()
	if err := s.Validate(p); err != nil {
		t.Fatalf("placeholder %v does not match: %v", p, err)
	}
	got, _ := json.Marshal(p)
	want := `{"at":"1970-01-01T00:00:00Z","id":"00000000-0000-0000-0000-000000000000","kind":"k","n":3,"nested":{"x":0},"ok":false,"owner":"dry-runxxx","score":-2,"sev":"sev1","tags":["dry-run","dry-run"],"who":"dry-run@example.invalid"}`
	if string(got) != want {
		t.Errorf("placeholder\n got %s\nwant %s", got, want)
	}
	if (*Schema)(nil).Placeholder() == nil {
		t.Error("no schema: want an empty object")
	}
}
