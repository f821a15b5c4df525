package compiler

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
)

// Markers of the plan's values, in arguments and conditions. Each is an
// object with that one key; a literal map in a runbook can never look like
// one, since its keys are identifiers.
const (
	// RefKey marks a reference to a step's result: {"$ref": "case.case_id"},
	// the step key then the path, as written without the "@".
	RefKey = "$ref"
	// InputKey marks an input: {"$input": "client_name"}.
	InputKey = "$input"
	// StrKey marks (str ...) with parts not known until run time:
	// {"$str": ["Failover of ", {"$input": "cluster"}]}. Its value is the
	// text of its parts joined (see Text). A (str ...) of literals only is
	// joined by the compiler and frozen as the string it makes.
	StrKey = "$str"
	// FailureKey marks a reference to the failure a hook runs after, in
	// the arguments and conditions of a hook (kind hook) only:
	// {"$failure": "failure.code"}, the reference as written without the
	// "@", like a $ref.
	FailureKey = "$failure"
	// ItemKey marks the element a step template of a loop runs for, in
	// the arguments and conditions of templates and the lists of nested
	// loops only: {"$item": "host.name"}, the reference as written without
	// the "@", whose first part names the loop's item (Loop.Item). Expand
	// replaces it; the runtime never resolves one.
	ItemKey = "$item"

	// The markers of v1.4's value forms (docs/design/language.md v1.4,
	// docs/reference/values.md). The runtime evaluates them with EvalForm.

	// StatusKey marks (status @x): {"$status": "x"}, the step key. Its
	// value is the status the step settled with (lang.StepStatuses). A
	// condition that holds one has a settle edge from the step.
	StatusKey = "$status"
	// DefaultKey marks (default REF VALUE): {"$default": [REF, VALUE]},
	// REF's value when it is present and not null, else VALUE's.
	DefaultKey = "$default"
	// CountKey marks (count LIST): {"$count": LIST}, an integer.
	CountKey = "$count"
	// FilterKey marks (filter LIST :as @e COND):
	// {"$filter": {"list": LIST, "as": "e", "where": COND}}, COND a frozen
	// condition ({"op", "args"}) in which {"$elem": "e..."} reads the
	// element. Its value is the elements for which COND holds, in order.
	FilterKey = "$filter"
	// AnyKey marks (any LIST :as @e COND), shaped as $filter: true when
	// COND holds for some element (false for an empty list).
	AnyKey = "$any"
	// AllKey marks (all LIST :as @e COND), shaped as $filter: true when
	// COND holds for every element (true for an empty list).
	AllKey = "$all"
	// ElemKey marks a reference to the element of filter, any or all,
	// inside its condition only: {"$elem": "e.env"}, as written without
	// the "@". EvalForm replaces it by the element before the condition
	// is decided.
	ElemKey = "$elem"
	// IndexKey marks an element of a list that only a form makes, in the
	// instances of a loop over (filter ...): {"$index": {"list": LIST,
	// "path": "[2].name"}}, LIST's value walked by path, as a $ref's
	// path is walked. Expand writes it; the compiler never does.
	IndexKey = "$index"
)

// jsonValue converts a value to the plan's JSON: literals as JSON values,
// references and inputs as marker objects. Numbers are written in JSON's
// own grammar (the language allows leading zeros, JSON does not).
func jsonValue(v lang.Value) any { return frozenValue(v, nil) }

// freezeValue is jsonValue knowing the runbook's for-each items, whose
// references are $item markers.
func (a *analysis) freezeValue(v lang.Value) any { return frozenValue(v, a.items) }

func frozenValue(v lang.Value, items map[string]*loop) any {
	return freezer{items: items}.value(v)
}

// freezer freezes values knowing the names in scope: the for-each items
// (their references become $item) and the elements of the list forms
// around the value (theirs become $elem). Scopes are lexical, so a freezer
// is a value, extended as it descends.
type freezer struct {
	items map[string]*loop
	elems []string
}

func (fz freezer) isElem(name string) bool { return slices.Contains(fz.elems, name) }

func (fz freezer) value(v lang.Value) any {
	switch v := v.(type) {
	case *lang.Func:
		return fz.fn(v)
	case *lang.String:
		return v.Value
	case *lang.Int:
		return json.Number(strconv.FormatInt(v.Value, 10))
	case *lang.Decimal:
		return json.Number(strconv.FormatFloat(v.Value, 'g', -1, 64))
	case *lang.Bool:
		return v.Value
	case *lang.Null:
		return nil
	case *lang.Ref:
		if fz.isElem(v.Name) {
			return map[string]any{ElemKey: v.PathString()}
		}
		if v.Name == failureBinding || v.Name == failuresBinding {
			return map[string]any{FailureKey: v.PathString()}
		}
		if fz.items[v.Name] != nil {
			return map[string]any{ItemKey: v.PathString()}
		}
		return map[string]any{RefKey: v.PathString()}
	case *lang.Input:
		return map[string]any{InputKey: v.Name}
	case *lang.Str:
		parts := make([]any, len(v.Parts))
		for i, p := range v.Parts {
			parts[i] = fz.value(p)
		}
		if isLiteral(v) {
			return Text(parts)
		}
		return map[string]any{StrKey: parts}
	case *lang.List:
		out := make([]any, len(v.Items))
		for i, item := range v.Items {
			out[i] = fz.value(item)
		}
		return out
	case *lang.Map:
		out := make(map[string]any, len(v.Entries))
		for _, e := range v.Entries {
			if _, dup := out[e.Name]; !dup { // repeats are reported as E023
				out[e.Name] = fz.value(e.Value)
			}
		}
		return out
	}
	return nil
}

// Text joins the resolved parts of a (str ...) into its text (docs/design/language.md
// v1.2): a string as it is, anything else as its canonical JSON (compact,
// object keys sorted, numbers as written), so null is "null" and 1.50 is
// "1.5" when it came from the runbook but "1.50" when a result said so.
// The compiler joins literal parts with it; the runtime joins resolved
// ones with it, so both agree.
func Text(parts []any) string {
	var b strings.Builder
	for _, p := range parts {
		if s, ok := p.(string); ok {
			b.WriteString(s)
			continue
		}
		b.Write(appendJSON(nil, p))
	}
	return b.String()
}

// isLiteral reports whether v holds no reference and no input, so that its
// value is known at compile time.
func isLiteral(v lang.Value) bool {
	literal := true
	lang.Walk(v, func(v lang.Value) {
		switch v.(type) {
		case *lang.Ref, *lang.Input, *lang.Bad, *lang.Call, *lang.Cond, *lang.Func:
			literal = false
		}
	})
	return literal
}

// fn freezes a v1.4 value form into its marker (see StatusKey). A form
// the compiler reported as malformed freezes to what it can; no plan is
// written from one.
func (fz freezer) fn(f *lang.Func) any {
	arg := func(i int) any {
		if i < len(f.Args) {
			return fz.value(f.Args[i])
		}
		return nil
	}
	switch f.Name {
	case lang.FormStatus:
		name := ""
		if len(f.Args) > 0 {
			if ref, ok := f.Args[0].(*lang.Ref); ok {
				name = ref.Name
			}
		}
		return map[string]any{StatusKey: name}
	case lang.FormDefault:
		return map[string]any{DefaultKey: []any{arg(0), arg(1)}}
	case lang.FormCount:
		return map[string]any{CountKey: arg(0)}
	}
	key := map[string]string{lang.FormFilter: FilterKey, lang.FormAny: AnyKey, lang.FormAll: AllKey}[f.Name]
	as := ""
	if f.As != nil {
		if ref, ok := f.As.Value.(*lang.Ref); ok {
			as = ref.Name
		}
	}
	inner := fz
	inner.elems = append(slices.Clone(fz.elems), as)
	var where any
	if len(f.Args) > 1 {
		where = inner.cond(f.Args[1])
	}
	return map[string]any{key: map[string]any{"list": arg(0), "as": as, "where": where}}
}

// cond freezes a condition standing inside a value (the COND of filter,
// any or all) as the plan's JSON of a Cond: {"op", "args"}. (any ...) and
// (all ...) standing as a condition are (= (any ...) true).
func (fz freezer) cond(v lang.Value) any {
	switch v := v.(type) {
	case *lang.Cond:
		args := make([]any, len(v.Args))
		for i, a := range v.Args {
			if IsLogical(v.Op) {
				args[i] = fz.cond(a)
			} else {
				args[i] = fz.value(a)
			}
		}
		return map[string]any{"op": v.Op, "args": args}
	case *lang.Func:
		return map[string]any{"op": lang.OpEq, "args": []any{fz.value(v), true}}
	}
	return nil
}
