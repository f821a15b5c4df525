package lsp

import (
	"fmt"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
)

// operatorDocs describes each operator of a condition (docs/design/language.md v1.2),
// for completion and hover.
var operatorDocs = map[string]struct{ detail, doc string }{
	lang.OpEq:     {"equal", "`(= a b)`: true when the two values are equal as JSON (numbers by value). A string is never equal to a number (E050)."},
	lang.OpNe:     {"not equal", "`(!= a b)`: true when the two values differ."},
	lang.OpLt:     {"less than", "`(< a b)`: compares two numbers (E051 for anything else)."},
	lang.OpLe:     {"less than or equal", "`(<= a b)`: compares two numbers."},
	lang.OpGt:     {"greater than", "`(> a b)`: compares two numbers."},
	lang.OpGe:     {"greater than or equal", "`(>= a b)`: compares two numbers."},
	lang.OpAnd:    {"all of two or more conditions", "`(and (> @a.n 1) (< @a.n 5))`: true when every condition is; stops at the first false."},
	lang.OpOr:     {"any of two or more conditions", "`(or c1 c2 ...)`: true when one condition is; stops at the first true."},
	lang.OpNot:    {"the opposite of one condition", "`(not c)`"},
	lang.OpIn:     {"a value in a list", "`(in @x.status [\"open\" \"new\"])`: true when the value equals an element of the list."},
	lang.OpExists: {"a reference that resolves", "`(exists @lookup.record)`: true when the step has a result holding the path, and the value there is not nil."},
}

// formDocs describes the forms that are not operators.
var formDocs = map[string]string{
	lang.FormStr:       "`(str V...)`: text, the parts joined: strings as they are, anything else as JSON. `(str)` is the empty string.",
	lang.FormOnFailure: "`(on-failure CALL...)`: calls that run once, after compensation, when the runbook ends failed, partial or cancelled. They may read `@failure` (code, message, step, status) and the results of steps that completed (nil for the others).",
}

// failureDoc describes @failure.
const failureDoc = "`@failure`: the failure the hooks of `(on-failure ...)` run after: `code` and `message` of the error, the `step` that failed (empty for a cancellation), and the runbook's final `status` (failed, partial or cancelled)."

// completeOperators offers the operators of a condition, comparisons
// first.
func completeOperators(add func(protocol.CompletionItem)) {
	for i, op := range lang.Operators {
		d := operatorDocs[op]
		add(protocol.CompletionItem{
			Label:         op,
			Kind:          protocol.CompletionItemKindOperator,
			Detail:        d.detail,
			Documentation: markdown(d.doc),
			InsertText:    op,
			SortText:      fmt.Sprintf("%03d", i),
		})
	}
}

// formDoc describes the head of a form: an operator, str or on-failure.
func formDoc(head string) string {
	if d, ok := operatorDocs[head]; ok {
		return "operator " + d.doc
	}
	return formDocs[head]
}
