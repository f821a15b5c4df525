package lang

import (
	"fmt"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// token is one token of a source: its type (one of syntax's token types),
// its text as written, and where it starts. Where it ends is worked out from
// its text (end) rather than stored: a 100k-step runbook has over a million
// tokens, and the 24 bytes of a stored end were a third of their memory
// (BENCHMARKS.md, "Compile under 2 s").
type token struct {
	typ   lexer.TokenType
	text  string
	start Pos
}

// end is where the token ends (exclusive): its start moved over its text,
// as the scanner moved over it.
func (t token) end() Pos { return t.start.advance(t.text) }

func (t token) is(punct string) bool { return t.typ == syntax.Punct && t.text == punct }

// opensCall reports whether token i is a "(" that opens a call rather
// than a form: one not followed by an operator or a form's head word.
// Calls are numbered by their "(" (docs/design/language.md v1.1), forms are not.
func (ts *tokenStream) opensCall(i int) bool {
	return ts.toks[i].is("(") && !ts.opensForm(i)
}

// opensForm reports whether token i is a "(" that opens a form: (str ...),
// (on-failure ...) or a condition.
func (ts *tokenStream) opensForm(i int) bool {
	if !ts.toks[i].is("(") || i+1 >= len(ts.toks) {
		return false
	}
	next := ts.toks[i+1]
	return next.typ == syntax.Op || next.typ == syntax.Word && IsFormHead(next.text)
}

// headedByWord reports whether token i is a "(" followed by an operator or
// a single word: a form, or what the grammar parses as one (a misspelt
// operator, a verb missing its domain), whose items may be values.
func (ts *tokenStream) headedByWord(i int) bool {
	if !ts.toks[i].is("(") || i+1 >= len(ts.toks) {
		return false
	}
	next := ts.toks[i+1].typ
	return next == syntax.Op || next == syntax.Word
}

// tokenStream is a scanned file: its tokens in order, and what the scanner
// found besides them.
type tokenStream struct {
	file    string
	src     string
	toks    []token
	strs    map[int]string // token index → decoded value, for strings with escapes
	notes   []Comment      // comments, kept apart so token indexes stay dense
	diags   Diagnostics
	binary  bool // the file holds a NUL byte; nothing was scanned
	openStr bool // an unterminated string ran to the end of the file
}

// stringValue is the decoded value of string token i.
func (ts *tokenStream) stringValue(i int) string {
	if v, ok := ts.strs[i]; ok {
		return v
	}
	raw := ts.toks[i].text
	return raw[1 : len(raw)-1]
}

func (ts *tokenStream) rangeOf(i int) Range {
	return Range{Filename: ts.file, Start: ts.toks[i].start, End: ts.toks[i].end()}
}

func (ts *tokenStream) span(first, last int) Range {
	return Range{Filename: ts.file, Start: ts.toks[first].start, End: ts.toks[last].end()}
}

// describe names a token for syntax errors: `")"`, `argument name :as`.
func describe(t token) string {
	switch t.typ {
	case syntax.Punct:
		return fmt.Sprintf("%q", t.text)
	case syntax.Keyword:
		return fmt.Sprintf("argument name %s", t.text)
	case syntax.Ref:
		return fmt.Sprintf("reference %s", t.text)
	case syntax.Input:
		return fmt.Sprintf("input %s", t.text)
	case syntax.String, syntax.Bad:
		v := t.text
		if len(v) > 30 {
			v = v[:27] + "..."
		}
		return fmt.Sprintf("string %s", v)
	case syntax.Int, syntax.Decimal:
		return fmt.Sprintf("number %s", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}
