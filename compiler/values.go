package compiler

import (
	"encoding/json"
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
)

// jsonValue converts a value to the plan's JSON: literals as JSON values,
// references and inputs as marker objects. Numbers are written in JSON's
// own grammar (the language allows leading zeros, JSON does not).
func jsonValue(v lang.Value) any { return frozenValue(v, nil) }

// freezeValue is jsonValue knowing the runbook's for-each items, whose
// references are $item markers.
func (a *analysis) freezeValue(v lang.Value) any { return frozenValue(v, a.items) }

func frozenValue(v lang.Value, items map[string]*loop) any {
	switch v := v.(type) {
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
		if v.Name == failureBinding {
			return map[string]any{FailureKey: v.PathString()}
		}
		if items[v.Name] != nil {
			return map[string]any{ItemKey: v.PathString()}
		}
		return map[string]any{RefKey: v.PathString()}
	case *lang.Input:
		return map[string]any{InputKey: v.Name}
	case *lang.Str:
		parts := make([]any, len(v.Parts))
		for i, p := range v.Parts {
			parts[i] = frozenValue(p, items)
		}
		if isLiteral(v) {
			return Text(parts)
		}
		return map[string]any{StrKey: parts}
	case *lang.List:
		out := make([]any, len(v.Items))
		for i, item := range v.Items {
			out[i] = frozenValue(item, items)
		}
		return out
	case *lang.Map:
		out := make(map[string]any, len(v.Entries))
		for _, e := range v.Entries {
			if _, dup := out[e.Name]; !dup { // repeats are reported as E023
				out[e.Name] = frozenValue(e.Value, items)
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
		case *lang.Ref, *lang.Input, *lang.Bad, *lang.Call, *lang.Cond:
			literal = false
		}
	})
	return literal
}
