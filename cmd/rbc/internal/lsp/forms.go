package lsp

import (
	"fmt"

	"go.lsp.dev/protocol"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
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
	lang.FormForEach:   "`(for-each LIST :as @item [:parallel N] CALL...)`: the calls run once for each element of the list (written out, an `$input`, or a reference to a list), with `@item` bound to the element; `:parallel N` bounds how many elements run at once. A call's `:as @x` makes `@x`, outside the form, the list of its results.",
	lang.FormStr:       "`(str V...)`: text, the parts joined: strings as they are, anything else as JSON. `(str)` is the empty string.",
	lang.FormOnFailure: "`(on-failure CALL...)`: calls that run once, after compensation, when the runbook ends failed, partial or cancelled. They may read `@failure` (code, message, step, status) and the results of steps that completed (nil for the others).",
}

// funcDocs describes the value forms of v1.4 (docs/reference/language.md,
// "Status, defaults and lists").
var funcDocs = map[string]struct{ detail, doc string }{
	lang.FormStatus:  {"the status a step settled with", "`(status @x)`: `succeeded`, `failed`, `skipped`, `cancelled`, `escalated` or `in_doubt`. A condition reading it waits for `@x` to settle (a settle edge) and is evaluated whatever `@x` settled with: the \"else\" of a step, `(!= (status @review) \"succeeded\")`."},
	lang.FormDefault: {"a value when a field is missing", "`(default REF VALUE)`: REF's value when it is present and not nil, else VALUE, which has REF's type. Wrap a field the output_schema does not require (W004)."},
	lang.FormCount:   {"how many elements", "`(count LIST)`: the number of elements of LIST, an integer."},
	lang.FormFilter:  {"the elements for which a condition holds", "`(filter LIST :as @e COND)`: the elements of LIST, in order, for which COND holds; `@e` is bound inside COND only. Its items have LIST's schema, so it may be a for-each's list."},
	lang.FormAny:     {"whether a condition holds for some element", "`(any LIST :as @e COND)`: true when COND holds for some element (false for an empty list)."},
	lang.FormAll:     {"whether a condition holds for every element", "`(all LIST :as @e COND)`: true when COND holds for every element (true for an empty list)."},
}

// completeFuncs offers the value forms of v1.4 after a "(" where a value
// may stand; where a condition stands (cond), only those that are one.
func completeFuncs(add func(protocol.CompletionItem), cond bool) {
	for i, name := range lang.Funcs {
		if cond && name != lang.FormAny && name != lang.FormAll {
			continue
		}
		d := funcDocs[name]
		add(protocol.CompletionItem{
			Label:         name,
			Kind:          protocol.CompletionItemKindFunction,
			Detail:        d.detail,
			Documentation: markdown(d.doc),
			InsertText:    name,
			SortText:      fmt.Sprintf("%03d", 100+i),
		})
	}
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
	if d, ok := funcDocs[head]; ok {
		return d.doc
	}
	return formDocs[head]
}

// elementSchema is the schema of the element of the for-each around token
// i whose :as is name: the items of the list it reads, when the list is a
// reference to a step's result (or to the element of a for-each around
// it) and the schemas say.
func (s *Server) elementSchema(o *outline, i int, name string) (map[string]any, bool) {
	for _, l := range o.loopsAround(i) {
		if l.item != name {
			continue
		}
		if l.list < 0 || o.toks[l.list].Kind != lang.TokenRef {
			return nil, true // a list written out, or an input: nothing says
		}
		listName, path := parseRef(o.toks[l.list].Text)
		var list map[string]any
		if producer, ok := o.bindings[listName]; ok {
			def, ok := s.cat.definition(o.verbName(producer))
			if !ok {
				return nil, true
			}
			list = schemaAt(def.OutputSchema, path)
		} else if outer, ok := s.elementSchema(o, l.open, listName); ok {
			list = rawSchemaAt(outer, path)
		}
		return verbs.Items(list, 0), true
	}
	return nil, false
}
