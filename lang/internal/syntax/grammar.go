package syntax

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The grammar's nodes capture whole tokens. A captured token's position is
// its index among the call's tokens (see ParseTop and Index), which is all
// that package lang reads from a tree: it takes each token's text and range
// from its own scan. So a tree says only which token plays which part, and
// serves as the tree of every call with the same token types.

// File = { Top } .
type File struct {
	Items []*Top `parser:"@@*"`
}

// Top = Call | Form .
//
// A top-level item is a verb call, or one of the language's forms
// ((on-failure ...) and (for-each ...) are only valid there; package lang
// reports the others).
type Top struct {
	Call *Call `parser:"  @@"`
	Form *Form `parser:"| @@"`
}

// Call = "(" VerbName { Keyword Value } ")" .
//
// A verb name is a Name: two or more identifiers joined by dots.
type Call struct {
	Open  lexer.Token `parser:"@\"(\""`
	Verb  lexer.Token `parser:"@Name"`
	Args  []*Arg      `parser:"@@*"`
	Close lexer.Token `parser:"@\")\""`
}

// Form = "(" ( Op | Word ) { Keyword Value | Value } ")" .
//
// A form is a parenthesis whose head is not a verb name: an operator
// (= != < <= > >=) or a single identifier (str, and, or, not, in, exists,
// on-failure, for-each). Its items are values and keyword options in any
// order; package lang decides what each form accepts, so the grammar stays
// one rule and every misuse gets a diagnostic in the language's words. A
// call's verb always holds a dot and a form's head never does, so the
// first token after "(" tells them apart.
type Form struct {
	Open  lexer.Token `parser:"@\"(\""`
	Head  lexer.Token `parser:"@(Op | Word)"`
	Items []*Item     `parser:"@@*"`
	Close lexer.Token `parser:"@\")\""`
}

// Item is one of a form's items: a keyword option or a value, kept in
// source order.
type Item struct {
	Arg   *Arg   `parser:"  @@"`
	Value *Value `parser:"| @@"`
}

// Arg is a keyword and its value, in a call or in a map. It is a node of
// its own so that the keyword's token is recorded: participle keeps only
// the last token captured into a []lexer.Token field, so keywords captured
// side by side with their values would lose their positions.
type Arg struct {
	Key   lexer.Token `parser:"@Keyword"`
	Value *Value      `parser:"@@"`
}

// Value = String | Integer | Decimal | "true" | "false" | "nil" | Reference | Input | List | Map | Call | Form .
//
// A Call as a value is a nested call (docs/design/language.md v1.1): a step of its
// own whose result the value refers to. A Form as a value is (str ...) or
// a condition (docs/design/language.md v1.2).
type Value struct {
	Scalar *lexer.Token `parser:"  @(String | Int | Decimal | Ref | Input | Bad | \"true\" | \"false\" | \"nil\")"`
	List   *List        `parser:"| @@"`
	Map    *Map         `parser:"| @@"`
	Call   *Call        `parser:"| @@"`
	Form   *Form        `parser:"| @@"`
}

// List = "[" { Value } "]" .
type List struct {
	Open  lexer.Token `parser:"@\"[\""`
	Items []*Value    `parser:"@@*"`
	Close lexer.Token `parser:"@\"]\""`
}

// Map = "{" { Entry } "}" .
type Map struct {
	Open    lexer.Token `parser:"@\"{\""`
	Entries []*Entry    `parser:"@@*"`
	Close   lexer.Token `parser:"@\"}\""`
}

// Entry = ( Keyword | String ) Value .
//
// A map's key is a keyword, or a string naming an identifier, as an error
// code is written in :on-failure {"BUDGET_EXCEEDED" "abort" ...}
// (docs/design/language.md v1.4); package lang refuses a string that is
// no identifier, so a map written in a runbook never looks like a marker.
type Entry struct {
	Key   lexer.Token `parser:"@(Keyword | String)"`
	Value *Value      `parser:"@@"`
}

// Parser is built once; participle parsers are safe for concurrent use.
var Parser = participle.MustBuild[File](participle.Lexer(Definition{}))
