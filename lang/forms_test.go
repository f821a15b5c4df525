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

func TestParseForEach(t *testing.T) {
	src := "(lb.list :as @hosts)\n" +
		"(for-each @hosts.items :as @host :parallel 2\n" +
		"  (lb.drain :host @host.name :as @drained)\n" +
		"  (for-each @host.ports :as @port (lb.check :port @port :z (x.y))))\n" +
		"(report.send :all @drained)"
	f, diags := Parse("t.rbk", []byte(src))
	require.Empty(t, diags)
	require.Len(t, f.Calls, 2)
	require.Len(t, f.ForEach, 1)
	l := f.ForEach[0]
	require.Equal(t, "hosts", l.List.(*Ref).Name)
	require.Equal(t, []string{"as", "parallel"}, []string{l.Options[0].Name, l.Options[1].Name})
	require.Equal(t, 1, l.Depth)
	require.Len(t, l.Body, 2)
	inner := l.Body[1].(*ForEach)
	require.Equal(t, 2, inner.Depth)
	var indexes []int
	for _, c := range l.Calls() {
		indexes = append(indexes, c.Index)
	}
	require.Equal(t, []int{2, 3}, indexes, "calls in a body are numbered; the forms are not")
	require.Equal(t, 5, f.Calls[1].Index, "(x.y), nested in (lb.check ...), is call 4")
	require.Equal(t, []Node{f.Calls[0], l, f.Calls[1]}, f.Top())
}

func TestParseForEachDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"no list", `(for-each :as @x (a.b))`,
			[]string{`1:11-1:17 E001 (for-each ...) starts with the list to go through, as in (for-each @hosts.items :as @host ...); found argument name :as`}},
		{"an option after a call", `(for-each @l :as @x (a.b) :parallel 2)`,
			[]string{`1:27-1:38 E001 the options of (for-each ...) come before its calls; found argument name :parallel after one`}},
		{"a value in the body", `(for-each @l :as @x (a.b) 5)`,
			[]string{`1:27-1:28 E001 the body of (for-each ...) holds calls, found number 5`}},
		{"no body", `(for-each @l :as @x)`,
			[]string{`1:2-1:10 E001 (for-each ...) holds no call: nothing would run for each element`}},
		{"nothing at all", `(for-each)`,
			[]string{`1:1-1:11 E001 (for-each ...) needs a list, :as @item and calls, as in (for-each @hosts.items :as @host (lb.drain :host @host))`}},
		{"as a value", `(a.b :x (for-each @l :as @i (c.d)))`,
			[]string{`1:9-1:35 E001 (for-each ...) is a top-level form; it cannot stand as a value`}},
		{"five deep", `(for-each @a :as @b (for-each @b :as @c (for-each @c :as @d (for-each @d :as @e (for-each @e :as @f (a.b))))))`,
			[]string{`1:82-1:90 E001 (for-each ...) nests more than 4 deep`}},
		{"four deep", `(for-each @a :as @b (for-each @b :as @c (for-each @c :as @d (for-each @d :as @e (a.b)))))`, nil},
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
