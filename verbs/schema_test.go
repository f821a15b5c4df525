package verbs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func compile(t *testing.T, role SchemaRole, doc string) *Schema {
	t.Helper()
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(doc), &raw))
	s, err := CompileSchema("test", raw, role)
	require.NoError(t, err)
	return s
}

func TestSchemaUUIDAndFormats(t *testing.T) {
	s := compile(t, InputRole, `{"required":["id"],"properties":{
		"id":{"type":"uuid"},
		"maybe":{"type":["uuid","null"]},
		"mail":{"type":"string","format":"email"},
		"both":{"type":"uuid","format":"uri"}}}`)
	require.NoError(t, s.ValidateProperty("id", "6f1c0d3e-2b7a-4d5e-9f00-1a2b3c4d5e6f"))
	require.EqualError(t, s.ValidateProperty("id", "case-1"), "'case-1' is not valid uuid: must have 5 elements")
	require.EqualError(t, s.ValidateProperty("id", json.Number("7")), "got number, want string")
	require.NoError(t, s.ValidateProperty("maybe", nil))
	require.Error(t, s.ValidateProperty("maybe", "nope"))
	require.Error(t, s.ValidateProperty("mail", "not an address"), "format is asserted, not only annotated")
	require.NoError(t, s.ValidateProperty("mail", "ops@example.com"))
	require.Error(t, s.ValidateProperty("both", "https://example.com"), "type uuid keeps its format beside another")
	require.NoError(t, s.ValidateProperty("unlisted", 5), "a property the schema does not list passes here; E021 catches it")

	require.Equal(t, map[string]any{"type": "uuid"}, mustField(t, s, "id"), "the schema keeps what was written")
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(b), `"id":{"type":"uuid"}`)
}

func mustField(t *testing.T, s *Schema, name string) map[string]any {
	sub, ok := s.Property(name)
	require.True(t, ok)
	return sub
}

func TestSchemaInputIsClosed(t *testing.T) {
	in := compile(t, InputRole, `{"properties":{"a":{"type":"string"}}}`)
	require.True(t, in.Closed())
	require.ErrorContains(t, in.Validate(map[string]any{"a": "x", "b": 1}), "additional properties 'b' not allowed")

	open := compile(t, InputRole, `{"properties":{"a":{}},"additionalProperties":true}`)
	require.False(t, open.Closed())
	require.NoError(t, open.Validate(map[string]any{"b": 1}))

	out := compile(t, OutputRole, `{"properties":{"a":{"type":"string"}}}`)
	require.NoError(t, out.Validate(map[string]any{"a": "x", "extra": true}), "results may carry more than they declare")
	require.True(t, out.Closed(), "but references into undeclared fields are still caught")
}

func TestSchemaTypes(t *testing.T) {
	require.Nil(t, Types(nil))
	require.Nil(t, Types(map[string]any{"description": "anything"}))
	require.Equal(t, []string{"string"}, Types(map[string]any{"type": "uuid"}))
	require.Equal(t, []string{"null", "string"}, Types(map[string]any{"type": []any{"uuid", "null"}}))
	require.Equal(t, []string{"string"}, Types(map[string]any{"enum": []any{"a", "b"}}))
	require.Equal(t, []string{"integer"}, Types(map[string]any{"const": json.Number("3")}))
	require.True(t, TypeAdmits([]string{"number"}, "integer"))
	require.False(t, TypeAdmits([]string{"integer"}, "number"))
	require.True(t, TypeAdmits(nil, "object"))
}

// TestSchemaLoadsNothingFromOutside: a $ref to a file is refused, not
// read. Schemas come from verb files and from submitted plans, and the
// schema library would otherwise read any file the daemon can.
func TestSchemaLoadsNothingFromOutside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "integer.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"type": "integer"}`), 0o644))
	for _, ref := range []string{"file://" + path, "file:///dev/zero", "https://schemas.example/x.json"} {
		_, err := CompileSchema("input_schema", map[string]any{"properties": map[string]any{"n": map[string]any{"$ref": ref}}}, InputRole)
		require.ErrorContains(t, err, "is outside the schema; a verb's schemas must be self-contained", ref)
	}
	// References inside the schema still work.
	s := compile(t, InputRole, `{"$defs":{"n":{"type":"integer"}},"properties":{"n":{"$ref":"#/$defs/n"}}}`)
	require.Error(t, s.ValidateProperty("n", "seven"))
}
