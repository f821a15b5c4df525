// Package lang holds the runbook language's front end: the scanner and the
// participle grammar, the AST with source ranges, literal decoding, the
// canonical formatter, and the Diagnostics type that every later pass
// (verbs, registry, compiler) reports through.
//
// Positions follow HCL's model: a Pos is a 1-based line, a 1-based column
// counted in Unicode code points, and a 0-based byte offset; a Range is a
// file name with a start and an end Pos, the end exclusive.
//
// Parsing never stops at the first mistake. Parse scans the source into
// tokens, splits them into calls, parses each call on its own with
// participle, and reports every syntax error (E001) and bad literal (E002)
// it finds in one run. Parse's documentation walks through the steps and
// the file each lives in.
package lang
