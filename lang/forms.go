package lang

import "slices"

// The heads of the language's forms: parentheses that are not verb calls
// (docs/design/language.md v1.2). They are reserved: no verb can be named so, since a
// verb's name holds a dot and a form's head never does.
const (
	// FormStr joins its parts into text: (str "Failover of " $cluster).
	FormStr = "str"
	// FormOnFailure holds the calls that run when the runbook fails.
	FormOnFailure = "on-failure"
	// FormForEach runs its calls once for each element of a list
	// (docs/design/language.md v1.3).
	FormForEach = "for-each"
)

// MaxForEachDepth bounds how deeply for-each forms nest (docs/design/language.md v1.3).
const MaxForEachDepth = 4

// The operators of a condition (docs/design/language.md v1.2).
const (
	OpEq     = "="
	OpNe     = "!="
	OpLt     = "<"
	OpLe     = "<="
	OpGt     = ">"
	OpGe     = ">="
	OpAnd    = "and"
	OpOr     = "or"
	OpNot    = "not"
	OpIn     = "in"
	OpExists = "exists"
)

// Operators lists every operator of a condition, comparisons first.
var Operators = []string{OpEq, OpNe, OpLt, OpLe, OpGt, OpGe, OpAnd, OpOr, OpNot, OpIn, OpExists}

// IsOperator reports whether op is an operator of a condition.
func IsOperator(op string) bool { return slices.Contains(Operators, op) }

// IsFormHead reports whether a word heads a form rather than a call: one
// of the forms or an operator. Any other single word after "(" is a verb
// name missing its domain.
func IsFormHead(word string) bool {
	return word == FormStr || word == FormOnFailure || word == FormForEach || IsOperator(word)
}
