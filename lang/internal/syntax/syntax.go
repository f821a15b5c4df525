// Package syntax holds the runbook language's token types and participle
// grammar. It lives apart from package lang so that the grammar's node
// types can carry the names the EBNF shows (Call, Value, ...) without
// clashing with lang's AST.
package syntax

import (
	"io"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Token types. Whitespace and commas are not tokens, and comments never
// reach the parser.
const (
	Punct   lexer.TokenType = iota + 1 // ( ) [ ] { }
	Name                               // identifier, possibly dotted: kyc.open-case, true
	Keyword                            // :case-id
	Ref                                // @docs.files[0].url
	Input                              // $client_name
	String                             // "..." (raw, with quotes)
	Int                                // -12
	Decimal                            // 1.5e3
	Bad                                // a malformed literal, already reported
)

// Definition tells participle the token types. Lex is never used for
// parsing: the caller scans and hands participle its tokens, so that lexical
// mistakes become diagnostics instead of a single error.
type Definition struct{}

// Symbols maps the names used in the grammar tags to token types.
func (Definition) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF": lexer.EOF, "Punct": Punct, "Name": Name, "Keyword": Keyword, "Ref": Ref,
		"Input": Input, "String": String, "Int": Int, "Decimal": Decimal, "Bad": Bad,
	}
}

// Lex is not supported; see Definition.
func (Definition) Lex(string, io.Reader) (lexer.Lexer, error) {
	return nil, errLexUnsupported
}

type lexError string

func (e lexError) Error() string { return string(e) }

const errLexUnsupported = lexError("syntax: scan with lang, then parse tokens with ParseTokens")

// The grammar's nodes capture whole tokens rather than participle's
// injected positions: a token carries its position and type, and the
// flatter tree (keys and values side by side, no node per argument) halves
// participle's allocations, which dominate parse time on large runbooks.

// File = { Call } .
type File struct {
	Calls []*Call `parser:"@@*"`
}

// Call = "(" VerbName { Keyword Value } ")" .
type Call struct {
	Open   lexer.Token `parser:"@\"(\""`
	Verb   lexer.Token `parser:"@Name"`
	Keys   []string    `parser:"( @Keyword"`
	Values []*Value    `parser:"  @@ )*"`
	Close  lexer.Token `parser:"@\")\""`
}

// Value = String | Integer | Decimal | "true" | "false" | "nil" | Reference | Input | List | Map .
type Value struct {
	Scalar *lexer.Token `parser:"  @(String | Int | Decimal | Ref | Input | Bad | \"true\" | \"false\" | \"nil\")"`
	List   *List        `parser:"| @@"`
	Map    *Map         `parser:"| @@"`
}

// List = "[" { Value } "]" .
type List struct {
	Open  lexer.Token `parser:"@\"[\""`
	Items []*Value    `parser:"@@*"`
	Close lexer.Token `parser:"@\"]\""`
}

// Map = "{" { Keyword Value } "}" .
type Map struct {
	Open   lexer.Token `parser:"@\"{\""`
	Keys   []string    `parser:"( @Keyword"`
	Values []*Value    `parser:"  @@ )*"`
	Close  lexer.Token `parser:"@\"}\""`
}

// Parser is built once; participle parsers are safe for concurrent use.
var Parser = participle.MustBuild[File](participle.Lexer(Definition{}))

// sliceLexer replays scanned tokens.
type sliceLexer struct {
	toks []lexer.Token
	eof  lexer.Position
	i    int
}

func (l *sliceLexer) Next() (lexer.Token, error) {
	if l.i >= len(l.toks) {
		return lexer.EOFToken(l.eof), nil
	}
	t := l.toks[l.i]
	l.i++
	return t, nil
}

// ParseTokens parses already scanned tokens, with eof as the position of
// the end of input.
func ParseTokens(toks []lexer.Token, eof lexer.Position) (*File, error) {
	peek, err := lexer.Upgrade(&sliceLexer{toks: toks, eof: eof})
	if err != nil {
		return nil, err
	}
	return Parser.ParseFromLexer(peek)
}
