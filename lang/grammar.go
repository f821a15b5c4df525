package lang

import "github.com/runbookdev/runbook/lang/internal/syntax"

// EBNF returns the grammar in participle's EBNF notation. A golden test pins
// it, so any grammar change is seen in review.
func EBNF() string { return syntax.Parser.String() }
