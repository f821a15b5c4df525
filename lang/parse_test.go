package lang

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// diagLine renders a diagnostic as "line:col-endline:endcol CODE message",
// the form the tables below pin.
func diagLine(d *Diagnostic) string {
	r := d.Range
	return fmt.Sprintf("%d:%d-%d:%d %s %s", r.Start.Line, r.Start.Column, r.End.Line, r.End.Column, d.Code, d.Message)
}

func diagLines(ds Diagnostics) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = diagLine(d)
	}
	return out
}

func TestParseDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"missing value", `(a.b :x)`,
			[]string{`1:8-1:9 E001 expected a value after :x, found ")"`}},
		{"value where a keyword belongs", `(a.b 5)`,
			[]string{`1:6-1:7 E001 expected an argument name (:name) or ")", found number 5`}},
		{"bare word as value", `(a.b :w foo)`,
			[]string{`1:9-1:12 E001 expected a value after :w, found "foo"`}},
		{"no verb", `()`,
			[]string{`1:2-1:3 E001 expected a verb name (domain.verb) after "(", found ")"`}},
		{"unclosed call at end of file", "(a.b :x 1",
			[]string{`1:10-1:10 E001 missing ")" before the end of the file`}},
		{"unclosed call before the next", "(a.b :x 1\n(c.d)",
			[]string{`1:10-1:10 E001 missing ")" before "("`}},
		{"unclosed list", `(a.b :x [1 2)`,
			[]string{`1:13-1:14 E001 expected a value or "]", found ")"`}},
		{"keyword in list", `(a.b :x [1 :y])`,
			[]string{`1:12-1:14 E001 expected a value or "]", found argument name :y`}},
		{"value in map", `(a.b :x {:a 1 2})`,
			[]string{`1:15-1:16 E001 expected an argument name (:name) or "}", found number 2`}},
		{"junk between calls", "foo (a.b)",
			[]string{`1:1-1:4 E001 expected "(" to start a call, found "foo"`}},
		{"three-part verb", `(capital.share-class.create)`, nil},
		{"one-part verb", `(ab :x 1)`,
			[]string{`1:2-1:4 E001 verb name "ab" must be two or more identifiers joined by dots, as in kyc.open-case`}},
		{"unexpected character", `(a.b :x 1 #)`,
			[]string{`1:11-1:12 E001 unexpected character '#'`}},
		{"run of unexpected characters", `(a.b :x ~~~ 1)`,
			[]string{`1:9-1:12 E001 unexpected characters "~~~"`}},
		{"lone sigils", `(a.b :x @ :y $ :z :)`,
			[]string{
				`1:9-1:10 E001 '@' must be followed by a binding name, as in @case`,
				`1:14-1:15 E001 '$' must be followed by an input name, as in $client_name`,
				`1:19-1:20 E001 ':' must be followed by an argument name, as in :case-id`,
			}},
		{"invalid UTF-8 outside strings", "(a.b :x \xff)",
			[]string{`1:9-1:10 E001 invalid UTF-8 byte 0xFF`}},
		{"unknown escape", `(a.b :x "a\qb")`,
			[]string{`1:11-1:13 E002 unknown escape \q (valid escapes are \" \\ \n \r \t \uXXXX)`}},
		{"short unicode escape", `(a.b :x "\u12")`,
			[]string{`1:10-1:12 E002 \u must be followed by four hex digits`}},
		{"unpaired surrogate", `(a.b :x "\ud800x")`,
			[]string{`1:10-1:16 E002 unpaired surrogate "\\ud800"`}},
		{"integer overflow", `(a.b :x 9223372036854775808)`,
			[]string{`1:9-1:28 E002 integer 9223372036854775808 does not fit in 64 bits`}},
		{"negative integer at the limit", `(a.b :x -9223372036854775808)`, nil},
		{"malformed number", `(a.b :x 12ab)`,
			[]string{`1:9-1:13 E002 malformed number "12ab" (integers are -?[0-9]+, decimals -?[0-9]+.[0-9]+ with an optional exponent)`}},
		{"decimal out of range", `(a.b :x 1.0e999)`,
			[]string{`1:9-1:16 E002 decimal 1.0e999 is out of range`}},
		{"unterminated string", "(a.b :x \"abc\n(c.d)",
			[]string{`1:9-1:13 E002 unterminated string: no closing '"' before the end of the file`}},
		{"invalid UTF-8 in a string", "(a.b :x \"a\xfe\")",
			[]string{`1:11-1:12 E002 invalid UTF-8 byte 0xFE in string`}},
		{"index too large", `(a.b :x @r[99999999999999999999])`,
			[]string{`1:11-1:33 E002 index [99999999999999999999] is too large`}},
		{"binary file", "(a.b)\x00\x01",
			[]string{`1:6-1:7 E001 this is not a text file (NUL byte at offset 5)`}},
		{"columns count code points", "(a.b :x \"é\" #)",
			[]string{`1:13-1:14 E001 unexpected character '#'`}},
		{"several mistakes in one run", "(a.b :x)\n(c.d 5)\n(e.f :y \"\\q\")",
			[]string{
				`1:8-1:9 E001 expected a value after :x, found ")"`,
				`2:6-2:7 E001 expected an argument name (:name) or ")", found number 5`,
				`3:10-3:12 E002 unknown escape \q (valid escapes are \" \\ \n \r \t \uXXXX)`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireParseDiagnostics(t, tt.src, tt.want) })
	}
}

// requireParseDiagnostics parses src and requires the diagnostics want
// (in diagLine's form), none when want is nil.
func requireParseDiagnostics(t *testing.T, src string, want []string) {
	t.Helper()
	_, diags := Parse("t.rbk", []byte(src))
	got := diagLines(diags)
	if want == nil {
		require.Empty(t, got)
		return
	}
	require.Equal(t, want, got)
}

func TestParseAST(t *testing.T) {
	src := "(kyc.open-case :name $client :n -12 :d 1.5e3 :ok true :no false :none nil\n" +
		"  :ref @docs.files[0].url :list [1 \"two\"] :map {:k \"v\\u00e9\"} :as @case)"
	f, diags := Parse("t.rbk", []byte(src))
	require.Empty(t, diags)
	require.Len(t, f.Calls, 1)
	c := f.Calls[0]
	require.Equal(t, "kyc.open-case", c.Verb)
	require.Equal(t, Range{"t.rbk", Pos{1, 2, 1}, Pos{1, 15, 14}}, c.VerbRange)
	require.Equal(t, 1, c.Index)
	names := make([]string, len(c.Args))
	for i, a := range c.Args {
		names[i] = a.Name
	}
	require.Equal(t, []string{"name", "n", "d", "ok", "no", "none", "ref", "list", "map", "as"}, names)

	require.Equal(t, &Input{Name: "client", Span: Range{"t.rbk", Pos{1, 22, 21}, Pos{1, 29, 28}}}, c.Args[0].Value)
	require.Equal(t, int64(-12), c.Args[1].Value.(*Int).Value)
	require.Equal(t, 1500.0, c.Args[2].Value.(*Decimal).Value)
	require.Equal(t, true, c.Args[3].Value.(*Bool).Value)
	require.Equal(t, false, c.Args[4].Value.(*Bool).Value)
	require.IsType(t, &Null{}, c.Args[5].Value)

	ref := c.Args[6].Value.(*Ref)
	require.Equal(t, "docs", ref.Name)
	require.Equal(t, "docs.files[0].url", ref.PathString())
	require.Equal(t, Range{"t.rbk", Pos{2, 8, 81}, Pos{2, 13, 86}}, ref.NameRange)
	require.Equal(t, []PathStep{
		{Field: "files", Span: Range{"t.rbk", Pos{2, 13, 86}, Pos{2, 19, 92}}},
		{Index: 0, IsIndex: true, Span: Range{"t.rbk", Pos{2, 19, 92}, Pos{2, 22, 95}}},
		{Field: "url", Span: Range{"t.rbk", Pos{2, 22, 95}, Pos{2, 26, 99}}},
	}, ref.Path)

	list := c.Args[7].Value.(*List)
	require.Len(t, list.Items, 2)
	require.Equal(t, "two", list.Items[1].(*String).Value)
	m := c.Args[8].Value.(*Map)
	require.Equal(t, "k", m.Entries[0].Name)
	require.Equal(t, "vé", m.Entries[0].Value.(*String).Value)
	require.Equal(t, `"v\u00e9"`, m.Entries[0].Value.(*String).Raw)
	require.Equal(t, Pos{2, 73, 146}, c.Span.End)
}

func TestParseStringEscapes(t *testing.T) {
	f, diags := Parse("t.rbk", []byte(`(a.b :s "q\" b\\ n\n r\r t\t u\u0041 pair\ud83d\ude00")`))
	require.Empty(t, diags)
	require.Equal(t, "q\" b\\ n\n r\r t\t uA pair😀", f.Calls[0].Args[0].Value.(*String).Value)
}

func TestParseMultilineStringRange(t *testing.T) {
	f, diags := Parse("t.rbk", []byte("(a.b :s \"one\ntwo\" :n 1)"))
	require.Empty(t, diags)
	s := f.Calls[0].Args[0].Value.(*String)
	require.Equal(t, "one\ntwo", s.Value)
	require.Equal(t, Pos{2, 5, 17}, s.Span.End)
	require.Equal(t, Pos{2, 6, 18}, f.Calls[0].Args[1].NameRange.Start)
}

func TestParseUnparsedNames(t *testing.T) {
	f, diags := Parse("t.rbk", []byte("(a.b :x @used.f :as @bound 5)\n(c.d :y 1 :as @ok)"))
	require.Len(t, diags, 1)
	require.Len(t, f.Calls, 1)
	require.Equal(t, map[string]bool{"bound": true}, f.Unparsed.Bound)
	require.Equal(t, map[string]bool{"used": true}, f.Unparsed.Referenced)
}

func TestParseHostileInputs(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		f, diags := Parse("t.rbk", nil)
		require.Empty(t, diags)
		require.Empty(t, f.Calls)
	})
	t.Run("10 MB string literal", func(t *testing.T) {
		big := strings.Repeat("x", 10<<20)
		f, diags := Parse("t.rbk", []byte(`(a.b :s "`+big+`")`))
		require.Empty(t, diags)
		require.Len(t, f.Calls[0].Args[0].Value.(*String).Value, 10<<20)
	})
	t.Run("deep nesting", func(t *testing.T) {
		src := "(a.b :x " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + ")\n(c.d :y 1)"
		f, diags := Parse("t.rbk", []byte(src))
		require.Equal(t, []string{"1:73-1:74 E001 lists, maps and nested calls nest more than 64 levels deep"}, diagLines(diags))
		require.Len(t, f.Calls, 1, "the next call still parses")
	})
	t.Run("nesting at the limit", func(t *testing.T) {
		src := "(a.b :x " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + ")"
		_, diags := Parse("t.rbk", []byte(src))
		require.Empty(t, diags)
	})
	t.Run("garbage stops after 100 errors", func(t *testing.T) {
		src := strings.Repeat("# ", 500)
		_, diags := Parse("t.rbk", []byte(src))
		require.Len(t, diags, maxLexErrors+1)
		require.Equal(t, "too many errors; stopped reading here", diags[len(diags)-1].Message)
	})
}

func TestParseNumbersCallsAcrossFile(t *testing.T) {
	f, diags := Parse("t.rbk", []byte("(a.b)\n(c.d :x)\n(e.f)"))
	require.Len(t, diags, 1)
	require.Len(t, f.Calls, 2)
	require.Equal(t, 1, f.Calls[0].Index)
	require.Equal(t, 3, f.Calls[1].Index, "a call that failed to parse keeps its number")
}

func TestParseNestedCalls(t *testing.T) {
	src := "(a.b :x (c.d :y (e.f) :as @cd) :z [(g.h) 1])\n(i.j)"
	f, diags := Parse("t.rbk", []byte(src))
	require.Empty(t, diags)
	require.Len(t, f.Calls, 2)
	outer := f.Calls[0]
	require.Equal(t, 1, outer.Index)
	cd := outer.Args[0].Value.(*Call)
	require.Equal(t, "c.d", cd.Verb)
	require.Equal(t, 2, cd.Index, "numbered by the position of its opening parenthesis")
	require.Equal(t, 3, cd.Args[0].Value.(*Call).Index)
	require.Equal(t, "cd", cd.Args[1].Value.(*Ref).Name)
	gh := outer.Args[1].Value.(*List).Items[0].(*Call)
	require.Equal(t, "g.h", gh.Verb)
	require.Equal(t, 4, gh.Index)
	require.Equal(t, 5, f.Calls[1].Index)
	require.Equal(t, Pos{1, 9, 8}, cd.Span.Start)
	require.Equal(t, Pos{1, 31, 30}, cd.Span.End)
}

func TestParseNestedCallRecovery(t *testing.T) {
	t.Run("a call left open before the next", func(t *testing.T) {
		// The "(" after a value cannot be nested, so the first call was
		// left open and the second still parses.
		f, diags := Parse("t.rbk", []byte("(a.b :x (c.d :y 1)\n(e.f :z 2)"))
		require.Equal(t, []string{`1:19-1:19 E001 missing ")" before "("`}, diagLines(diags))
		require.Len(t, f.Calls, 1)
		require.Equal(t, "e.f", f.Calls[0].Verb)
		require.Equal(t, 3, f.Calls[0].Index)
	})
	t.Run("a nested call with a bad verb name", func(t *testing.T) {
		f, diags := Parse("t.rbk", []byte("(a.b :x (cd :y 1) :w 2)"))
		require.Equal(t, []string{`1:10-1:12 E001 verb name "cd" must be two or more identifiers joined by dots, as in kyc.open-case`}, diagLines(diags))
		require.IsType(t, &Bad{}, f.Calls[0].Args[0].Value)
	})
	t.Run("a value after a nested call", func(t *testing.T) {
		_, diags := Parse("t.rbk", []byte("(a.b :x (c.d :y 1 2))"))
		require.Equal(t, []string{`1:19-1:20 E001 expected an argument name (:name) or ")", found number 2`}, diagLines(diags))
	})
	t.Run("nested calls past the limit", func(t *testing.T) {
		src := "(a.b" + strings.Repeat(" :x (a.b", 100) + strings.Repeat(")", 101) + "\n(c.d :y 1)"
		f, diags := Parse("t.rbk", []byte(src))
		require.Len(t, diags, 1)
		require.Contains(t, diags[0].Message, "nest more than 64 levels deep")
		require.Len(t, f.Calls, 1, "the next call still parses")
	})
}

func TestParseNestedCallLeftOutNotesItsNames(t *testing.T) {
	f, diags := Parse("t.rbk", []byte("(a.b :x (cd :y @used.f :as @bound))\n(c.d :z @bound.v)"))
	require.Len(t, diags, 1)
	require.Len(t, f.Calls, 2)
	require.Equal(t, map[string]bool{"bound": true}, f.Unparsed.Bound, "so @bound below is not also E030")
	require.Equal(t, map[string]bool{"used": true}, f.Unparsed.Referenced)
}

// A "(" in the first column starts a call, so a list or call left open
// does not take the calls after it down with it.
func TestParseRecoversAtTheFirstColumn(t *testing.T) {
	f, diags := Parse("t.rbk", []byte("(a.b :x [1 2\n(c.d :y 1)\n(e.f :x\n(g.h))"))
	require.Equal(t, []string{
		`1:13-1:13 E001 missing "]" before "("`,
		`3:6-3:8 E001 expected a value after :x, found nothing`,
		`4:6-4:7 E001 expected "(" to start a call, found ")"`,
	}, diagLines(diags))
	require.Len(t, f.Calls, 2)
	require.Equal(t, "c.d", f.Calls[0].Verb)
	require.Equal(t, "g.h", f.Calls[1].Verb)
}

// A map's key may be written as a string (docs/design/language.md v1.4:
// :on-failure {"BUDGET_EXCEEDED" "abort" ...}), but only one naming an
// identifier: a map in a runbook never looks like a plan's marker, so
// {"$ref" ...} is a syntax error, never a reference.
func TestQuotedMapKeys(t *testing.T) {
	f, diags := Parse("t.rbk", []byte(`(a.b :m {"BUDGET_EXCEEDED" "abort" :default "continue" "$ref" "x" "" 1 "a b" 2})`))
	var codes []string
	for _, d := range diags {
		codes = append(codes, string(d.Code)+" "+d.Message)
	}
	if len(diags) != 3 {
		t.Fatalf("got %v, want three E001 (for \"$ref\", \"\" and \"a b\")", codes)
	}
	for _, d := range diags {
		if d.Code != ESyntax {
			t.Errorf("got %s, want E001", d.Code)
		}
	}
	m := f.Calls[0].Args[0].Value.(*Map)
	if e := m.Entries[0]; e.Name != "BUDGET_EXCEEDED" || !e.Quoted || e.Key() != `"BUDGET_EXCEEDED"` {
		t.Errorf("entry 0 is %+v", e)
	}
	if e := m.Entries[1]; e.Name != "default" || e.Quoted || e.Key() != ":default" {
		t.Errorf("entry 1 is %+v", e)
	}
	if out := string(Format(f)); !strings.Contains(out, `{"BUDGET_EXCEEDED" "abort" :default "continue"`) {
		t.Errorf("formatted as %s", out)
	}
}
