package lang

import (
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// TokenKind says what a Token is.
type TokenKind int

// The kinds of token Lex returns. Whitespace, commas and comments are not
// tokens.
const (
	TokenPunct   TokenKind = iota + 1 // ( ) [ ] { }
	TokenName                         // a verb name, a constant or a form's head: kyc.open-case, true, str
	TokenKeyword                      // :case-id
	TokenRef                          // @docs.files[0].url
	TokenInput                        // $client_name
	TokenString                       // "...", quotes included
	TokenNumber                       // -12, 1.5e3
	TokenBad                          // a malformed literal
	TokenOp                           // a comparison operator: = != < <= > >=
)

// Token is one token of a source, as written, with its range.
type Token struct {
	Kind  TokenKind
	Text  string
	Range Range
}

// Lex returns the tokens of a source, the same ones Parse reads, whether
// or not they make a valid runbook. Tools that must understand a file
// while it is being typed (the language server's completion) use it: a
// call with a syntax error is not in Parse's AST, but its tokens are here.
func Lex(filename string, src []byte) []Token {
	ts := scan(filename, src)
	out := make([]Token, len(ts.toks))
	for i, t := range ts.toks {
		out[i] = Token{Kind: tokenKinds[t.typ], Text: t.text, Range: ts.rangeOf(i)}
	}
	return out
}

var tokenKinds = map[lexer.TokenType]TokenKind{
	syntax.Punct:   TokenPunct,
	syntax.Name:    TokenName,
	syntax.Word:    TokenName,
	syntax.Op:      TokenOp,
	syntax.Keyword: TokenKeyword,
	syntax.Ref:     TokenRef,
	syntax.Input:   TokenInput,
	syntax.String:  TokenString,
	syntax.Int:     TokenNumber,
	syntax.Decimal: TokenNumber,
	syntax.Bad:     TokenBad,
}
