package lang

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The forms of docs/design/language.md v1.2: (str ...), conditions, (on-failure ...),
// and the origin's names.

func TestParseForms(t *testing.T) {
	src := "(a.b :x (str \"n=\" $n 1 (c.d)) :when (and (= @529900k9.x 1) (not (exists @y))) :as @529900k9)\n" +
		"(on-failure\n  (e.f :m @failure.message)\n  (g.h))\n" +
		"(capital.share-class.create :v 1)"
	f, diags := Parse("t.rbk", []byte(src))
	require.Empty(t, diags)
	require.Len(t, f.Calls, 2)
	require.Len(t, f.OnFailure, 1)

	c := f.Calls[0]
	str := c.Args[0].Value.(*Str)
	require.Len(t, str.Parts, 4)
	require.Equal(t, Range{"t.rbk", Pos{1, 10, 9}, Pos{1, 13, 12}}, str.HeadRange)
	require.Equal(t, 2, str.Parts[3].(*Call).Index, "a call inside (str ...) is numbered; the form is not")

	cond := c.Args[1].Value.(*Cond)
	require.Equal(t, OpAnd, cond.Op)
	eq := cond.Args[0].(*Cond)
	require.Equal(t, OpEq, eq.Op)
	require.Equal(t, "529900k9", eq.Args[0].(*Ref).Name, "a binding may start with a digit")
	require.Equal(t, OpExists, cond.Args[1].(*Cond).Args[0].(*Cond).Op)
	require.Equal(t, "529900k9", c.Args[2].Value.(*Ref).Name)

	h := f.OnFailure[0]
	require.Equal(t, Range{"t.rbk", Pos{2, 2, 94}, Pos{2, 12, 104}}, h.HeadRange)
	require.Len(t, h.Calls, 2)
	require.Equal(t, []int{3, 4}, []int{h.Calls[0].Index, h.Calls[1].Index})
	require.Equal(t, "capital.share-class.create", f.Calls[1].Verb)
	require.Equal(t, 5, f.Calls[1].Index)
	require.Equal(t, []Node{c, h, f.Calls[1]}, f.Top())
}

func TestParseFormDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"str takes no arguments", `(a.b :x (str "a" :y 1))`,
			[]string{`1:18-1:20 E001 (str ...) joins values, not argument names; found :y`}},
		{"a condition takes no arguments", `(a.b :when (= :y 1))`,
			[]string{`1:15-1:17 E001 a condition takes values, not argument names; found :y`}},
		{"str at the top level", `(str "a")`,
			[]string{`1:1-1:10 E001 expected a call at the top level, found (str ...), which stands where a value may`}},
		{"a condition at the top level", `(= 1 2)`,
			[]string{`1:1-1:8 E001 expected a call at the top level, found (= ...), which stands where a value may`}},
		{"on-failure holds calls", `(on-failure (a.b) 5 :x 1)`,
			[]string{
				`1:19-1:20 E001 (on-failure ...) holds calls, found number 5`,
				`1:21-1:25 E001 (on-failure ...) holds calls, found argument name :x`,
			}},
		{"on-failure as a value", `(a.b :x (on-failure (c.d)))`,
			[]string{`1:9-1:27 E001 (on-failure ...) is a top-level form; it cannot stand as a value`}},
		{"a word without a domain", `(a.b :x (foo))`,
			[]string{`1:10-1:13 E001 verb name "foo" must be two or more identifiers joined by dots, as in kyc.open-case`}},
		{"a value in a form", `(a.b :when (= 1 foo))`,
			[]string{`1:17-1:20 E001 expected a value or ")", found "foo"`}},
		{"a condition left open", "(a.b :when (= 1 2)",
			[]string{`1:19-1:19 E001 missing ")" before the end of the file`}},
		{"a misspelt operator still parses", `(a.b :when (adn (= 1 1) (=< 1 2)))`, nil},
		{"an all-digit binding", `(a.b :x @2024.x)`,
			[]string{
				`1:9-1:14 E001 binding name "2024" holds no letter; a name may start with a digit but must hold a letter, as in @529900k9`,
				`1:14-1:15 E001 unexpected character '.'`,
			}},
		{"an empty str", `(a.b :x (str))`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireParseDiagnostics(t, tt.src, tt.want) })
	}
}

func TestLexOperators(t *testing.T) {
	toks := Lex("t.rbk", []byte(`(a.b :when (<= @529900k9 ==))`))
	kinds := make([]TokenKind, len(toks))
	for i, tok := range toks {
		kinds[i] = tok.Kind
	}
	require.Equal(t, []TokenKind{TokenPunct, TokenName, TokenKeyword, TokenPunct, TokenOp, TokenRef, TokenOp, TokenPunct, TokenPunct}, kinds)
}
