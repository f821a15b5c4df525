package syntax

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The grammar's nodes capture whole tokens. A captured token's position is
// its index among the call's tokens (see ParseCall and Index), which is all
// that package lang reads from a tree: it takes each token's text and range
// from its own scan. So a tree says only which token plays which part, and
// serves as the tree of every call with the same token types.

// File = { Call } .
type File struct {
	Calls []*Call `parser:"@@*"`
}

// Call = "(" VerbName { Keyword Value } ")" .
type Call struct {
	Open  lexer.Token `parser:"@\"(\""`
	Verb  lexer.Token `parser:"@Name"`
	Args  []*Arg      `parser:"@@*"`
	Close lexer.Token `parser:"@\")\""`
}

// Arg is a keyword and its value, in a call or in a map. It is a node of
// its own so that the keyword's token is recorded: participle keeps only
// the last token captured into a []lexer.Token field, so keywords captured
// side by side with their values would lose their positions.
type Arg struct {
	Key   lexer.Token `parser:"@Keyword"`
	Value *Value      `parser:"@@"`
}

// Value = String | Integer | Decimal | "true" | "false" | "nil" | Reference | Input | List | Map | Call .
//
// A Call as a value is a nested call (docs/design/language.md v1.1): a step of its
// own whose result the value refers to.
type Value struct {
	Scalar *lexer.Token `parser:"  @(String | Int | Decimal | Ref | Input | Bad | \"true\" | \"false\" | \"nil\")"`
	List   *List        `parser:"| @@"`
	Map    *Map         `parser:"| @@"`
	Call   *Call        `parser:"| @@"`
}

// List = "[" { Value } "]" .
type List struct {
	Open  lexer.Token `parser:"@\"[\""`
	Items []*Value    `parser:"@@*"`
	Close lexer.Token `parser:"@\"]\""`
}

// Map = "{" { Keyword Value } "}" .
type Map struct {
	Open    lexer.Token `parser:"@\"{\""`
	Entries []*Arg      `parser:"@@*"`
	Close   lexer.Token `parser:"@\"}\""`
}

// Parser is built once; participle parsers are safe for concurrent use.
var Parser = participle.MustBuild[File](participle.Lexer(Definition{}))
