package verbs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A property declared by its type alone passes a value of that type
// without the library, and gets the library's verdict, and its message,
// otherwise: the shortcut never admits what the library refuses.
func TestTypeOnlyPropertiesAgreeWithTheLibrary(t *testing.T) {
	raw := map[string]any{"properties": map[string]any{
		"s": map[string]any{"type": "string"}, "i": map[string]any{"type": "integer"},
		"n": map[string]any{"type": "number"}, "b": map[string]any{"type": "boolean"},
		"z": map[string]any{"type": "null"}, "o": map[string]any{"type": "object"},
		"a": map[string]any{"type": "array"}, "u": map[string]any{"type": "uuid"},
		"f": map[string]any{"type": "string", "format": "email"},
	}}
	s, err := CompileSchema("t", raw, InputRole)
	require.NoError(t, err)
	require.NotContains(t, s.typeOnly, "u", "uuid is a string with a format")
	require.NotContains(t, s.typeOnly, "f")
	values := []any{"x", "", json.Number("1"), json.Number("-12"), json.Number("1.5"), json.Number("1e3"),
		json.Number("1.0"), json.Number("123456789012345678901234567890"), true, nil, map[string]any{}, []any{},
		"3c1e7a90-2b4d-5e8f-9a63-0d7c1b4e8f25", "a@b.c", float64(2), 7}
	for name := range raw["properties"].(map[string]any) {
		for _, v := range values {
			got := s.ValidateProperty(name, v)
			want := validationError(s.props[name].Validate(v))
			if want == nil {
				require.NoError(t, got, "%s %#v", name, v)
			} else {
				require.EqualError(t, got, want.Error(), "%s %#v", name, v)
			}
		}
	}
}
