package compiler

import (
	"encoding/json"
	"strconv"

	"github.com/runbookdev/runbook/lang"
)

// Markers of the plan's argument JSON.
const (
	RefKey   = "$ref"
	InputKey = "$input"
)

// jsonValue converts a value to the plan's JSON: literals as JSON values,
// references and inputs as marker objects. Numbers are written in JSON's
// own grammar (the language allows leading zeros, JSON does not).
func jsonValue(v lang.Value) any {
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
		return map[string]any{RefKey: v.PathString()}
	case *lang.Input:
		return map[string]any{InputKey: v.Name}
	case *lang.List:
		out := make([]any, len(v.Items))
		for i, item := range v.Items {
			out[i] = jsonValue(item)
		}
		return out
	case *lang.Map:
		out := make(map[string]any, len(v.Entries))
		for _, e := range v.Entries {
			if _, dup := out[e.Name]; !dup { // repeats are reported as E023
				out[e.Name] = jsonValue(e.Value)
			}
		}
		return out
	}
	return nil
}

// isLiteral reports whether v holds no reference and no input, so that its
// value is known at compile time.
func isLiteral(v lang.Value) bool {
	literal := true
	lang.Walk(v, func(v lang.Value) {
		switch v.(type) {
		case *lang.Ref, *lang.Input, *lang.Bad, *lang.Call:
			literal = false
		}
	})
	return literal
}
