// Package syntax holds the runbook language's participle grammar and the
// token types it is written in. Package lang scans a source into tokens,
// splits them into calls, and hands each call's tokens to ParseCall.
//
// It lives apart from package lang so that the grammar's node types can
// carry the names the EBNF shows (Call, Value, ...) without clashing with
// lang's AST.
package syntax
