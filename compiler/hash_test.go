package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// FuzzAppendString holds the canonical string encoding equal to
// encoding/json's for any input.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\"", "back\\", "<>&", "\u2028\u2029", "\x00\x1f\x7f", "\xff\xfe", "é😀", "\b\f\n\r\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendString(nil, s)))
	})
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, false, "s", json.Number("-1.5e3"),
		[]any{json.Number("1"), "two", nil, []any{}},
		map[string]any{"b": json.Number("2"), "a": map[string]any{"$ref": "x.y"}, "c": []any{map[string]any{}}},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendJSON(nil, v)))
	}
}
