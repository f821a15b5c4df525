package syntax

import (
	"io"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types. Whitespace and commas are not tokens, and comments never
// reach the parser.
const (
	Punct   lexer.TokenType = iota + 1 // ( ) [ ] { }
	Name                               // two or more identifiers joined by dots: kyc.open-case
	Keyword                            // :case-id
	Ref                                // @docs.files[0].url
	Input                              // $client_name
	String                             // "..." (raw, with quotes)
	Int                                // -12
	Decimal                            // 1.5e3
	Bad                                // a malformed literal, already reported
	Word                               // one identifier: true, str, and, on-failure
	Op                                 // a run of = ! < >: an operator, such as <=
)

// Definition tells participle the token types. Its Lex is never used:
// package lang scans the source itself, so that every lexical mistake
// becomes a diagnostic of its own instead of one error that stops the
// parse, and hands ParseCall the tokens.
type Definition struct{}

// Symbols maps the names used in the grammar tags to token types.
func (Definition) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF": lexer.EOF, "Punct": Punct, "Name": Name, "Keyword": Keyword, "Ref": Ref,
		"Input": Input, "String": String, "Int": Int, "Decimal": Decimal, "Bad": Bad,
		"Word": Word, "Op": Op,
	}
}

// Lex is not supported; see Definition.
func (Definition) Lex(string, io.Reader) (lexer.Lexer, error) {
	return nil, errLexUnsupported
}

type lexError string

func (e lexError) Error() string { return string(e) }

const errLexUnsupported = lexError("syntax: scan with lang, then parse a call's tokens with ParseCall")
