package lang

import (
	"fmt"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/runbookdev/runbook/examples/runbooks/synthetic"
)

// regexpLexer is what the scanner would be if it were made from
// participle's lexer: the language's tokens as regular expressions. It
// only finds tokens; it decodes and checks nothing, and stops at the first
// character it cannot match.
var regexpLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Comment", Pattern: `;[^\n]*`},
	{Name: "Space", Pattern: `[\s,]+`},
	{Name: "String", Pattern: `"(\\.|[^"\\])*"`},
	{Name: "Keyword", Pattern: `:[A-Za-z_][A-Za-z0-9_-]*`},
	{Name: "Ref", Pattern: `@[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*|\[[0-9]+\])*`},
	{Name: "Input", Pattern: `\$[A-Za-z_][A-Za-z0-9_-]*`},
	{Name: "Decimal", Pattern: `-?[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?`},
	{Name: "Int", Pattern: `-?[0-9]+`},
	{Name: "Name", Pattern: `[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*`},
	{Name: "Punct", Pattern: `[()\[\]{}]`},
})

// BenchmarkScan measures the scanner against participle's regexp lexer
// on the same source: the figure that justifies a hand-written scanner
// (scan.go, BENCHMARKS.md).
func BenchmarkScan(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		src := synthetic.Runbook(n)
		b.Run(fmt.Sprintf("steps=%d/scanner", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if ts := scan("bench.rbk", src); len(ts.diags) > 0 {
					b.Fatal(ts.diags)
				}
			}
		})
		b.Run(fmt.Sprintf("steps=%d/participle-lexer", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				l, err := regexpLexer.LexString("bench.rbk", string(src))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := lexer.ConsumeAll(l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
