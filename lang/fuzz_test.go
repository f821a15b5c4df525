package lang

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParse feeds the parser arbitrary bytes. Whatever the input, Parse
// must not panic, every range it reports (diagnostics, related notes, AST
// nodes) must lie inside the input with line and column agreeing with the
// byte offset, and an input without errors must format to something that
// parses, formats to itself and means the same.
//
// Run longer with: go test ./lang -run XXX -fuzz FuzzParse -fuzztime 60s
func FuzzParse(f *testing.F) {
	seeds := []string{
		"",
		"(a.b)",
		`(kyc.open-case :client-name $client_name :jurisdiction "LU" :as @case)`,
		"(a.b :x [1 2.5 -3 true false nil] :m {:k \"v\\n\\u00e9\"} :r @x.y[0].z)",
		"(a.b ; comment\n  :x 1 ; trailing\n)\n;; end",
		"(a.b :x \"unterminated",
		"(a.b :x \"\\q\\u12\\ud800\")",
		"(a.b :x 99999999999999999999 :y 12ab :z 1.0e999)",
		"(a.b :x)\n(c.d 5)\n(e.f.g)",
		"(a.b :x [[[[[[[[[[[[]]]]]]]]]]]])",
		"\xff\xfe(a.b :x \"\xc3\x28\")",
		"(a.b :x \"multi\nline\" :y 1)",
		"(a.b :x @r[99999999999999999999])",
		"# ~ ( ) ] } { [",
		"(a.b :x 1\r\n:y 2)\r\n",
		"(a.b\x00)",
		// Nested calls (docs/design/language.md v1.1), well formed and not.
		"(a.b :x (c.d :y (e.f :as @e) :as @c) :z [(g.h) {:k (i.j)}])",
		"(a.b :x (c.d :y 1)\n(e.f :z 2)",
		"(a.b :x (c.d ; note\n  :y 1\n  ; before the close\n  ) :z (e))",
		"(a.b :x (c.d :y [1 2) :z 3)",
		"(a.b :x ((c.d)))",
		// Conditions, text, failure hooks and the origin's names
		// (docs/design/language.md v1.2), well formed and not.
		`(a.b :when (and (= @x.y 1) (or (< $n 2.5) (not (exists @z))) (in "a" ["a" "b"])) :as @529900k9)`,
		`(a.b :t (str "n=" $n " " (c.d :e 1) (str)) :when (!= (str @a) "x"))`,
		"(on-failure\n  (a.b :m @failure.message) ; note\n  (c.d :when (= @failure.status \"cancelled\")))",
		"(on-failure (a.b) 5 :x (str :y))\n(on-failure)",
		"(a.b :when (== @x 1) :w (eq 1) :v (=< 1 2) :u (adn (a) (b)))",
		"(capital.share-class.create :x @2024 :y @1a-b.c[0])",
		"(= 1 2)\n(str \"x\"\n(a.b :when (and (= 1",
		"(a.b :when (not (not (not (not (= 1 1))))) :x (foo 1 :y 2))",
		// for-each (docs/design/language.md v1.3), well formed and not.
		"(for-each @hosts.items :as @host :parallel 2\n  ; drain\n  (lb.drain :host @host.name :as @d)\n  (for-each @host.ports :as @p (lb.check :port @p)))",
		"(for-each [1 2 3] :as @n (a.b :n @n)) ; trailing\n(for-each $xs :as @x)",
		"(for-each :as @x (a.b))\n(for-each @l (a.b) :as @x 5)\n(a.b :x (for-each @l :as @i (c.d)))",
		"(for-each @a :as @b (for-each @b :as @c (for-each @c :as @d (for-each @d :as @e (for-each @e :as @f (a.b))))))",
		"(for-each)\n(for-each @l :as @i\n(a.b)",
		// Status tests, defaults, list forms and the call options of
		// docs/design/language.md v1.4, well formed and not.
		`(a.b :when (!= (status @review) "succeeded") :x (default @r.reason "none"))`,
		`(a.b :n (count (filter @u.items :as @e (= @e.env "prod"))) :when (and (any @u.items :as @e (exists @e.x)) (all [] :as @f (= @f 1))))`,
		"(for-each (filter @u.items :as @e (!= @e.id \"\")) :as @user\n  (a.b :id @user.id :parallel 2 :remind-after \"P7D\" :timeout-result {:decision \"revoke\"}))",
		`(a.b :on-failure {"BUDGET_EXCEEDED" "abort" "default" "continue"} :gate-when (= $env "prod") :approvers "compliance")`,
		`(a.b :x (status) :y (default) :z (filter @l :as @a :as @b (= 1 1)) :w (count 1 2) :v (any @l :x 1 (= 1 1)))`,
		`(a.b :m {"$ref" 1 "ok" 2 :k 3 "" 4})`,
		"(status @x)\n(filter @l :as @e (= 1 1))\n(on-failure (a.b :n (count @failures)))",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	examples, _ := filepath.Glob("../examples/runbooks/*/*.rbk")
	for _, path := range examples {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(src)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, diags := Parse("fuzz.rbk", src)
		for _, d := range diags {
			requireRangeInside(t, src, d.Range)
			for _, rel := range d.Related {
				requireRangeInside(t, src, rel.Range)
			}
		}
		calls := file.Calls
		for _, h := range file.OnFailure {
			requireRangeInside(t, src, h.Span)
			requireRangeInside(t, src, h.HeadRange)
			calls = append(calls, h.Calls...)
		}
		var loop func(l *ForEach)
		loop = func(l *ForEach) {
			requireRangeInside(t, src, l.Span)
			requireRangeInside(t, src, l.HeadRange)
			require.LessOrEqual(t, l.Depth, MaxForEachDepth)
			if l.List != nil {
				Walk(l.List, func(v Value) { requireRangeInside(t, src, v.Range()) })
			}
			for _, o := range l.Options {
				requireRangeInside(t, src, o.Range())
			}
			for _, n := range l.Body {
				switch n := n.(type) {
				case *Call:
					calls = append(calls, n)
				case *ForEach:
					loop(n)
				}
			}
		}
		for _, l := range file.ForEach {
			loop(l)
		}
		for _, c := range calls {
			requireRangeInside(t, src, c.Span)
			requireRangeInside(t, src, c.VerbRange)
			for _, a := range c.Args {
				requireRangeInside(t, src, a.NameRange)
				Walk(a.Value, func(v Value) {
					requireRangeInside(t, src, v.Range())
					switch v := v.(type) {
					case *Cond:
						requireRangeInside(t, src, v.OpRange)
					case *Str:
						requireRangeInside(t, src, v.HeadRange)
					}
				})
			}
		}
		for _, c := range file.Comments {
			requireRangeInside(t, src, c.Span)
		}
		if !diags.HasErrors() {
			assertFormatStable(t, file, Format(file))
		}
	})
}

// requireRangeInside checks that r lies within src and that its lines and
// columns are those of its byte offsets.
func requireRangeInside(t *testing.T, src []byte, r Range) {
	t.Helper()
	require.Equal(t, "fuzz.rbk", r.Filename)
	require.True(t, 0 <= r.Start.Byte && r.Start.Byte <= r.End.Byte && r.End.Byte <= len(src),
		"range %+v outside input of %d bytes", r, len(src))
	require.Equal(t, Pos{Line: 1, Column: 1}.advance(string(src[:r.Start.Byte])), r.Start, "start of %+v", r)
	require.Equal(t, Pos{Line: 1, Column: 1}.advance(string(src[:r.End.Byte])), r.End, "end of %+v", r)
}
