package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitRef(t *testing.T) {
	for _, tc := range []struct{ path, name, rest string }{
		{"case", "case", ""},
		{"case.case_id", "case", ".case_id"},
		{"docs.files[0].url", "docs", ".files[0].url"},
		{"kyc.open-case#2", "kyc.open-case#2", ""},
		{"kyc.open-case#2.case_id", "kyc.open-case#2", ".case_id"},
		{"t.list#12[0].id", "t.list#12", "[0].id"},
	} {
		name, rest := splitRef(tc.path)
		require.Equal(t, tc.name, name, tc.path)
		require.Equal(t, tc.rest, rest, tc.path)
	}
}

// A nested call without :as is keyed <verb>#<n>; a reference to its result
// resolves like any other.
func TestBindUnnamedNestedCall(t *testing.T) {
	b := &binder{results: map[string]json.RawMessage{"kyc.open-case#2": json.RawMessage(`{"case_id":"c-1"}`)}}
	v, err := b.resolve(map[string]any{"$ref": "kyc.open-case#2.case_id"})
	require.NoError(t, err)
	require.Equal(t, "c-1", v)
}
