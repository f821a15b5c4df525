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

// The value forms of docs/design/language.md v1.4: each is a list whose head says
// what it makes. They stand wherever a value may (a condition's operand,
// an argument); the compiler checks their operands.
const (
	// FormStatus is (status @x): the status @x settled with, a string.
	FormStatus = "status"
	// FormDefault is (default REF VALUE): REF's value when it is present
	// and not null, else VALUE.
	FormDefault = "default"
	// FormFilter is (filter LIST :as @e COND): the elements of LIST for
	// which COND holds.
	FormFilter = "filter"
	// FormCount is (count LIST): how many elements LIST holds.
	FormCount = "count"
	// FormAny is (any LIST :as @e COND): whether COND holds for some
	// element.
	FormAny = "any"
	// FormAll is (all LIST :as @e COND): whether COND holds for every
	// element.
	FormAll = "all"
)

// Funcs lists the value forms of v1.4, in the order the docs give them.
var Funcs = []string{FormStatus, FormDefault, FormFilter, FormCount, FormAny, FormAll}

// IsFunc reports whether word heads a value form of v1.4.
func IsFunc(word string) bool { return slices.Contains(Funcs, word) }

// TakesElement reports whether a value form binds an element with :as
// (filter, any and all).
func TakesElement(word string) bool {
	return word == FormFilter || word == FormAny || word == FormAll
}

// StepStatuses are the values (status @x) may take
// (docs/design/language.md v1.4).
var StepStatuses = []string{"succeeded", "failed", "skipped", "cancelled", "escalated", "in_doubt"}

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
	return word == FormStr || word == FormOnFailure || word == FormForEach || IsOperator(word) || IsFunc(word)
}
