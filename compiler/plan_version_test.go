package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// versionByTwoWalks is how plan decided its version before versionUsed.
func versionByTwoWalks(p *Plan) int {
	switch {
	case p.usesVersion3():
		return SchemaVersion
	case p.usesVersion2():
		return Version2
	}
	return BaseSchemaVersion
}

// versionUsed and markersOf decide what usesVersion2/3 and
// hasNewMarker/hasV3Marker decide, over values of every kind of marker and
// every plan the golden cases compile to.
func TestVersionUsedAgreesWithTheTwoWalks(t *testing.T) {
	values := []any{
		nil, "x", []any{}, map[string]any{},
		map[string]any{RefKey: "a.b"},
		map[string]any{InputKey: "name"},
		map[string]any{InputKey: "name.field"},
		map[string]any{InputKey: "name[0]"},
		map[string]any{StrKey: []any{"a", map[string]any{RefKey: "b"}}},
		map[string]any{FailureKey: "failures.x"},
		map[string]any{FailureKey: "a.error"},
		map[string]any{ItemKey: "it"},
		map[string]any{StatusKey: "a"},
		map[string]any{DefaultKey: []any{map[string]any{RefKey: "a"}, 1}},
		map[string]any{"k": map[string]any{CountKey: "a"}, "j": map[string]any{StrKey: "x"}},
		[]any{map[string]any{ItemKey: "it"}, map[string]any{FilterKey: "x"}},
		map[string]any{StatusKey: "a", "other": 1}, // not a marker: two keys
		&Cond{Op: "=", Args: []any{map[string]any{StatusKey: "a"}, "ok"}},
		&Cond{Op: "=", Args: []any{map[string]any{StrKey: "a"}, "ok"}},
		[]any{&Cond{Op: "and", Args: []any{&Cond{Op: "=", Args: []any{map[string]any{AnyKey: "a"}, true}}}}},
	}
	for i, v := range values {
		v2, v3 := markersOf(v)
		require.Equal(t, hasV3Marker(v), v3, "value %d: %#v", i, v)
		if !v3 {
			require.Equal(t, hasNewMarker(v), v2, "value %d: %#v", i, v)
		}
		p := &Plan{Steps: []*Step{{Key: "s", Args: map[string]any{"a": v}}}}
		require.Equal(t, versionByTwoWalks(p), p.versionUsed(), "value %d: %#v", i, v)
	}

	cat := testCatalogue(t)
	cases, err := filepath.Glob("testdata/cases/*.rbk")
	require.NoError(t, err)
	seen := map[int]int{}
	for _, path := range cases {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		p, _ := compileSource(t, cat, filepath.Base(path), src)
		if p == nil {
			continue
		}
		require.Equal(t, versionByTwoWalks(p), p.versionUsed(), path)
		require.Equal(t, p.SchemaVersion, p.versionUsed(), path)
		seen[p.versionUsed()]++
	}
	// The cases hold plans of every version, so the comparison covers each.
	require.Len(t, seen, 3, "plans by version: %v", seen)
}
