package lang

import (
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// shapes holds participle's parse tree for each call shape seen so far in
// one file. A shape is a call's sequence of token types, with the text of
// the tokens whose text steers the grammar (brackets, and the words true,
// false and nil). Participle's parse depends on nothing else, so calls of
// one shape have the same tree; and a tree records token indexes, not
// text (see package syntax), so it serves them all.
//
// It is there for speed. Participle builds a tree by reflection, at about
// 1.6 µs a token; generated and agent-written runbooks repeat a handful of
// shapes thousands of times. Parsing 100k generated steps took 2.1 s with
// participle parsing every call and 0.15 s with this cache (BenchmarkParse,
// BENCHMARKS.md), and the budget for all of `rbc compile` is 2 s.
//
// Every distinct shape is still parsed by participle, and only trees that
// parsed are kept, so syntax errors are always participle's own.
type shapes map[string]*syntax.Top

// maxShapes bounds how many trees one file keeps; a file with more distinct
// shapes has participle parse its other calls one by one. It is a variable
// so that BenchmarkParse can set it to 0, to measure participle alone.
var maxShapes = 4096

// tree returns the parse tree of a call's tokens.
func (s shapes) tree(toks []token) (*syntax.Top, error) {
	key := shapeKey(toks)
	if tree, ok := s[string(key)]; ok { // (this conversion does not allocate)
		return tree, nil
	}
	numbered := make([]lexer.Token, len(toks))
	for i, t := range toks {
		numbered[i] = lexer.Token{Type: t.typ, Value: t.text}
	}
	tree, err := syntax.ParseTop(numbered)
	if err == nil && len(s) < maxShapes {
		s[string(key)] = tree
	}
	return tree, err
}

// shapeKey describes the shape of a call's tokens.
func shapeKey(toks []token) []byte {
	key := make([]byte, 0, len(toks)*2)
	for _, t := range toks {
		key = append(key, byte(t.typ))
		switch t.typ {
		case syntax.Punct:
			key = append(key, t.text[0])
		case syntax.Word:
			switch t.text {
			case "true", "false", "nil":
				key = append(key, t.text[0])
			default:
				key = append(key, '_')
			}
		}
	}
	return key
}
