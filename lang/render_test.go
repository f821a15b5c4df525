package lang

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
)

// TestWriteText pins the text renderer: header line, source line, carets,
// notes for related ranges, tabs kept in the caret line, long lines cut to
// a window, and ranges that run onto later lines.
func TestWriteText(t *testing.T) {
	long := "(a.b :s \"" + strings.Repeat("x", 300) + "\" :bad #)"
	src := Sources{
		"a.rbk":    []byte("(kyc.opne-case :client-name $client_name :as @case)\n\t(a.b :x)\n"),
		"long.rbk": []byte(long),
		"crlf.rbk": []byte("(a.b :x 1)\r\n(c.d :y)\r\n"),
	}
	var ds Diagnostics
	ds.Errorf(EUnknownVerb, Range{"a.rbk", Pos{1, 2, 1}, Pos{1, 15, 14}}, "unknown verb %q", "kyc.opne-case").
		WithReplacements(Range{"a.rbk", Pos{1, 2, 1}, Pos{1, 15, 14}}, "kyc.opne-case", []string{"kyc.open-case", "kyc.open-cases"}, nil)
	ds.Errorf(ESyntax, Range{"a.rbk", Pos{2, 8, 59}, Pos{2, 9, 60}}, `expected a value after :x, found ")"`).
		WithRelated(Range{"a.rbk", Pos{2, 2, 53}, Pos{2, 3, 54}}, "the call starts here")
	ds.Warnf(WUnusedBinding, Range{"a.rbk", Pos{1, 46, 45}, Pos{2, 3, 54}}, "a range that spans lines")
	ds.Errorf(ESyntax, Range{"long.rbk", Pos{1, 317, 316}, Pos{1, 318, 317}}, "unexpected character '#'")
	ds.Errorf(EMissingArg, Range{"crlf.rbk", Pos{2, 8, 19}, Pos{2, 9, 20}}, "at the end of a CRLF line")
	ds.Errorf(ESyntax, Range{"missing.rbk", Pos{3, 1, 10}, Pos{3, 2, 11}}, "a file the renderer was not given")
	ds.Errorf(EBadOption, Range{"a.rbk", Pos{1, 2, 1}, Pos{1, 15, 14}}, "a note, then a fix").
		WithNote("notes come after related ranges").WithNote("and before fixes").
		WithFix("replace it", Edit{Range: Range{"a.rbk", Pos{1, 2, 1}, Pos{1, 15, 14}}, Text: "x"})

	var out bytes.Buffer
	require.NoError(t, WriteText(&out, ds, src))
	golden.Assert(t, out.String(), "render/text.golden")
}

func TestWriteJSONAndSARIF(t *testing.T) {
	var ds Diagnostics
	ds.Errorf(EDuplicateBinding, Range{"a.rbk", Pos{2, 10, 30}, Pos{2, 15, 35}}, "binding @case is defined twice").
		WithRelated(Range{"a.rbk", Pos{1, 10, 9}, Pos{1, 15, 14}}, "@case is first defined here")
	ds.Warnf(WUnusedBinding, Range{"a.rbk", Pos{3, 1, 40}, Pos{3, 6, 45}}, "binding @x is never referenced").
		WithNote("use it, or drop the :as")
	ds.Errorf(EUnknownArg, Range{"a.rbk", Pos{4, 6, 50}, Pos{4, 12, 56}}, "verb %q has no argument :cuont", "t.make").
		WithReplacements(Range{"a.rbk", Pos{4, 6, 50}, Pos{4, 12, 56}}, ":cuont", []string{":count"}, nil)

	var js bytes.Buffer
	require.NoError(t, WriteJSON(&js, ds))
	golden.Assert(t, js.String(), "render/diagnostics.json.golden")

	var empty bytes.Buffer
	require.NoError(t, WriteJSON(&empty, nil))
	require.Equal(t, "[]\n", empty.String())

	var sarif bytes.Buffer
	require.NoError(t, WriteSARIF(&sarif, ds, "rbc", "test"))
	golden.Assert(t, sarif.String(), "render/diagnostics.sarif.golden")
}

// TestNotesAndSuggestionsAreData checks that suggestions and notes stay
// out of the message, and that the one-line forms still show them.
func TestNotesAndSuggestionsAreData(t *testing.T) {
	var ds Diagnostics
	d := ds.Errorf(EUnknownVerb, Range{"a.rbk", Pos{1, 2, 1}, Pos{1, 15, 14}}, "unknown verb %q", "kyc.opne-case").
		WithSuggestions("kyc.open-case", "kyc.close-case").
		WithNote("the catalogue is %s", "kyc/")
	require.Equal(t, `unknown verb "kyc.opne-case"`, d.Message)
	require.Equal(t, `unknown verb "kyc.opne-case" (did you mean "kyc.open-case" or "kyc.close-case"?)`, d.Headline())
	require.Equal(t, `unknown verb "kyc.opne-case" (did you mean "kyc.open-case" or "kyc.close-case"?); the catalogue is kyc/`, d.Text())
	require.Equal(t, `a.rbk:1:2: error[E010]: `+d.Text(), d.Error())
	plain := ds.Errorf(ESyntax, Range{"a.rbk", Pos{1, 1, 0}, Pos{1, 2, 1}}, "plain")
	require.Equal(t, "plain", plain.Headline())
	require.Equal(t, "plain", plain.Text())
}

func TestDiagnosticsSortedDeduplicated(t *testing.T) {
	var ds Diagnostics
	r1 := Range{"b.rbk", Pos{1, 1, 0}, Pos{1, 2, 1}}
	r2 := Range{"a.rbk", Pos{5, 1, 40}, Pos{5, 2, 41}}
	r3 := Range{"a.rbk", Pos{1, 3, 2}, Pos{1, 4, 3}}
	ds.Errorf(ECycle, r1, "cycle")
	ds.Errorf(ESyntax, r2, "second")
	ds.Errorf(ECycle, r1, "cycle") // the same problem seen twice
	ds.Warnf(WUnusedBinding, r3, "first")
	got := ds.Sorted()
	require.Equal(t, []string{"first", "second", "cycle"}, []string{got[0].Message, got[1].Message, got[2].Message})
	require.Len(t, got, 3)
	require.True(t, got.HasErrors())
	errs, warns := got.Count()
	require.Equal(t, 2, errs)
	require.Equal(t, 1, warns)
	require.Equal(t, "a.rbk:1:3: warning[W001]: first\na.rbk:5:1: error[E001]: second\nb.rbk:1:1: error[E040]: cycle", got.Error())
}

func TestSuggest(t *testing.T) {
	names := []string{"kyc.open-case", "kyc.close-case", "kyc.review", "screening.run"}
	require.Equal(t, []string{"kyc.open-case", "kyc.close-case"}, Suggest("kyc.opne-case", names))
	require.Equal(t, []string{"kyc.review"}, Suggest("kyc.reveiw", names))
	require.Empty(t, Suggest("totally.different", names))
	require.Empty(t, Suggest("kyc.review", names), "an exact match is not a suggestion")
}
