package lsp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/lang"
)

func TestOutlineReadsCallsThatDoNotParse(t *testing.T) {
	src := `(kyc.open-case :client-name "x" :meta {:as @nope} :as @case)
(kyc.review :case-id @case.case_id :as
(kyc.approve :case-id @case.case_id :as @ok)`
	o := newOutline(lang.Lex("t.rbk", []byte(src)))
	require.Len(t, o.calls, 3)
	require.Equal(t, []string{"case", "kyc.review#2", "ok"}, []string{o.key(o.calls[0]), o.key(o.calls[1]), o.key(o.calls[2])})
	// Keywords inside a map are not the call's.
	var kws []string
	for _, k := range o.calls[0].keywords {
		kws = append(kws, o.toks[k].Text)
	}
	require.Equal(t, []string{":client-name", ":meta", ":as"}, kws)
	require.NotContains(t, o.bindings, "nope")
	require.Len(t, o.refsTo("case"), 3)
	// The second call is left open; a token of the third belongs to the
	// third, the innermost call around it.
	require.Same(t, o.calls[2], o.callAt(o.refsTo("ok")[0]))
	require.Same(t, o.calls[1], o.callAt(o.refsTo("case")[1]))
}

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		name string
		path string
	}{
		{"@docs", "docs", ""},
		{"@docs.files[0].url", "docs", ".files[0].url"},
		{"@docs.files[", "docs", ".files"},
		{"@docs.", "docs", "."},
	} {
		name, path := parseRef(tc.ref)
		ref := &lang.Ref{Name: name, Path: path}
		require.Equal(t, tc.name, name, tc.ref)
		require.Equal(t, tc.name+tc.path, ref.PathString(), tc.ref)
	}
}

func TestTypeOf(t *testing.T) {
	for want, schema := range map[string]map[string]any{
		"uuid":             {"type": "uuid"},
		"string (email)":   {"type": "string", "format": "email"},
		"array of integer": {"type": "array", "items": map[string]any{"type": "integer"}},
		"string | null":    {"type": []any{"string", "null"}},
		"any":              {},
	} {
		require.Equal(t, want, typeOf(schema))
	}
}
