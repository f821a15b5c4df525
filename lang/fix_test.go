package lang

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// at is the range of the first occurrence of what in src, on line 1.
func at(t *testing.T, src, what string) Range {
	t.Helper()
	i := indexOf(src, what)
	require.GreaterOrEqual(t, i, 0, what)
	return Range{"f.rbk", Pos{1, i + 1, i}, Pos{1, i + 1 + len(what), i + len(what)}}
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestApplyFixes(t *testing.T) {
	src := `(kyc.opne-case :nmae "x" :tag "a" :after @b)`
	var ds Diagnostics
	verb := ds.Errorf(EUnknownVerb, at(t, src, "kyc.opne-case"), "unknown verb").
		WithReplacements(at(t, src, "kyc.opne-case"), "kyc.opne-case", []string{"kyc.open-case"}, nil)
	arg := ds.Errorf(EUnknownArg, at(t, src, ":nmae"), "unknown argument").
		WithReplacements(at(t, src, ":nmae"), ":nmae", []string{":name"}, nil)
	ds.Errorf(EUnknownArg, at(t, src, ":tag"), "two candidates: left alone").
		WithReplacements(at(t, src, ":tag"), ":tag", []string{":tags", ":tab"}, nil)
	after := ds.Warnf(WImpliedAfter, at(t, src, " :after @b"), "redundant").
		WithFix("remove :after @b", Edit{Range: at(t, src, " :after @b")})
	ds.Errorf(EUnknownArg, at(t, src, "opne"), "overlaps the verb's fix: skipped").
		WithFix("write open", Edit{Range: at(t, src, "opne"), Text: "open"})
	other := at(t, src, ":tag")
	other.Filename = "other.rbk"
	ds.Errorf(EUnknownArg, other, "another file: skipped").WithFix("x", Edit{Range: other, Text: "y"})
	ds.Errorf(EUnknownArg, Range{"f.rbk", Pos{1, 1, 0}, Pos{1, 1, 999}}, "outside the source: skipped").WithFix("x", Edit{Range: Range{"f.rbk", Pos{1, 1, 0}, Pos{1, 1, 999}}})

	out, applied := ApplyFixes("f.rbk", []byte(src), ds)
	require.Equal(t, `(kyc.open-case :name "x" :tag "a")`, string(out))
	require.Equal(t, Diagnostics{verb, arg, after}, applied)
	require.Equal(t, `(kyc.opne-case :nmae "x" :tag "a" :after @b)`, src, "the input is not changed")
}

func TestFixOverlap(t *testing.T) {
	r := func(a, b int) Range { return Range{"f", Pos{1, a + 1, a}, Pos{1, b + 1, b}} }
	require.True(t, overlaps(r(0, 4), r(2, 6)))
	require.True(t, overlaps(r(3, 3), r(3, 3)), "two insertions at one place")
	require.False(t, overlaps(r(0, 4), r(4, 6)), "touching edits")
	require.False(t, overlaps(r(4, 4), r(0, 4)))
}
