package compiler

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/verbs"
)

// A remembered check answers what the schema answers, for valid and
// invalid lists and maps, seen once or again, and tells values apart that
// differ only in type (a string "1" and the number 1).
func TestLiteralChecksAnswerAsTheSchema(t *testing.T) {
	schema, err := verbs.CompileSchema("test", map[string]any{
		"properties": map[string]any{
			"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"meta": map[string]any{"type": "object", "properties": map[string]any{"step": map[string]any{"type": "integer"}}},
			"n":    map[string]any{"type": "integer"},
		},
	}, verbs.InputRole)
	require.NoError(t, err)
	values := []struct {
		name string
		v    any
	}{
		{"tags", []any{"a", "b"}},
		{"tags", []any{"a", json.Number("1")}},
		{"tags", []any{"a", "1"}},
		{"meta", map[string]any{"step": json.Number("2")}},
		{"meta", map[string]any{"step": "2"}},
		{"meta", map[string]any{"step": json.Number("2.5")}},
		{"n", json.Number("3")},
		{"n", "3"},
	}
	var checks literalChecks
	for round := range 3 { // the first round fills the memory, the others read it
		for i, c := range values {
			want := schema.ValidateProperty(c.name, c.v)
			got := checks.validate(schema, c.name, c.v)
			if want == nil {
				require.NoError(t, got, "round %d, value %d", round, i)
			} else {
				require.EqualError(t, got, want.Error(), "round %d, value %d", round, i)
			}
		}
	}
	require.Equal(t, 6, checks.held, "the six lists and maps, each once")
}
