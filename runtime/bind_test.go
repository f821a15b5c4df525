package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/machine"
)

// A reference names the step whose key is its longest prefix, cut before
// a "." or "[" (compiler.SplitRef): keys may hold dots and end in [i].
// Among keys, one whose result is in hand is preferred: an instance's
// result is also an element of its template's list.
func TestSplitRef(t *testing.T) {
	keys := map[string]bool{"case": true, "docs": true, "kyc.open-case#2": true, "t.list#12": true, "up": true, "up[1]": true}
	b := &machine.Binder{IsKey: func(k string) bool { return keys[k] }, Results: map[string]json.RawMessage{"up": nil}}
	for _, tc := range []struct{ path, name, rest string }{
		{"case", "case", ""},
		{"case.case_id", "case", ".case_id"},
		{"docs.files[0].url", "docs", ".files[0].url"},
		{"kyc.open-case#2", "kyc.open-case#2", ""},
		{"kyc.open-case#2.case_id", "kyc.open-case#2", ".case_id"},
		{"t.list#12[0].id", "t.list#12", "[0].id"},
		{"up[1].url", "up", "[1].url"},
		{"up[0]", "up", "[0]"},
	} {
		name, rest := b.SplitRef(tc.path)
		require.Equal(t, tc.name, name, tc.path)
		require.Equal(t, tc.rest, rest, tc.path)
	}
	b.Results = map[string]json.RawMessage{"up[1]": nil}
	name, rest := b.SplitRef("up[1].url")
	require.Equal(t, "up[1]", name)
	require.Equal(t, ".url", rest)
}

// A nested call without :as is keyed <verb>#<n>; a reference to its result
// resolves like any other.
func TestBindUnnamedNestedCall(t *testing.T) {
	b := &machine.Binder{Results: map[string]json.RawMessage{"kyc.open-case#2": json.RawMessage(`{"case_id":"c-1"}`)}}
	v, err := b.Resolve(map[string]any{"$ref": "kyc.open-case#2.case_id"})
	require.NoError(t, err)
	require.Equal(t, "c-1", v)
}
