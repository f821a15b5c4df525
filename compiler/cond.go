package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/lang"
)

// Cond is a frozen condition (docs/design/language.md v1.2): an operator and its
// operands, as {"op": "<", "args": [{"$ref": "lag.seconds"}, 5]}.
//
// Op is one of lang.Operators. For "and" and "or" (two or more) and "not"
// (one), Args are conditions (*Cond). For the others they are plan values
// (see Step): literals, {"$ref"}, {"$input"}, {"$str"}, and in a hook
// {"$failure"}.
//   - "=" and "!=" compare two values as JSON: numbers by value (5 equals
//     5.0), strings, booleans and null exactly, arrays and objects member
//     by member.
//   - "<", "<=", ">" and ">=" compare two numbers; an operand that is not a
//     number at run time fails the step (the compiler rules it out where
//     the schemas say, E051).
//   - "in" is true when its first value equals (as "=") an element of its
//     second, which must be an array.
//   - "exists" takes one {"$ref"} (or {"$failure"}): true when the step has
//     a result, every step of the path is present in it, and the value
//     there is not null. It never fails for a missing path.
//
// Everywhere else, a $ref whose path is missing fails the step with
// MISSING_REQUIRED_CONTEXT, as an argument's would. "and" and "or" look at
// their operands from the first and stop at the first that decides.
type Cond struct {
	Op   string `json:"op"`
	Args []any  `json:"args"`
}

// IsLogical reports whether op takes conditions rather than values.
func IsLogical(op string) bool { return op == lang.OpAnd || op == lang.OpOr || op == lang.OpNot }

// UnmarshalJSON reads a condition, its operands as conditions for the
// logical operators and as plan values (numbers as json.Number) for the
// others.
func (c *Cond) UnmarshalJSON(b []byte) error {
	var raw struct {
		Op   string            `json:"op"`
		Args []json.RawMessage `json:"args"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	c.Op = raw.Op
	if raw.Args == nil {
		return fmt.Errorf("condition %q has no args", raw.Op)
	}
	c.Args = make([]any, len(raw.Args))
	for i, arg := range raw.Args {
		if IsLogical(raw.Op) {
			sub := &Cond{}
			if err := json.Unmarshal(arg, sub); err != nil {
				return fmt.Errorf("operand %d of %q: %w", i+1, raw.Op, err)
			}
			c.Args[i] = sub
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(arg))
		dec.UseNumber()
		if err := dec.Decode(&c.Args[i]); err != nil {
			return err
		}
	}
	return nil
}

// appendCond appends a condition's canonical JSON, fields in the order
// encoding/json writes the struct.
func appendCond(b []byte, c *Cond) []byte {
	b = append(b, `{"op":`...)
	b = appendString(b, c.Op)
	b = append(b, `,"args":`...)
	if c.Args == nil {
		return append(b, "null}"...)
	}
	b = append(b, '[')
	for i, arg := range c.Args {
		if i > 0 {
			b = append(b, ',')
		}
		if sub, ok := arg.(*Cond); ok {
			b = appendCond(b, sub)
		} else {
			b = appendJSON(b, arg)
		}
	}
	return append(b, "]}"...)
}

// String renders the condition as a runbook writes it: (< @lag.seconds 5).
func (c *Cond) String() string {
	var b strings.Builder
	b.WriteString("(" + c.Op)
	for _, arg := range c.Args {
		b.WriteString(" ")
		if sub, ok := arg.(*Cond); ok {
			b.WriteString(sub.String())
		} else {
			b.WriteString(valueSource(arg))
		}
	}
	b.WriteString(")")
	return b.String()
}

// valueSource renders a plan value as a runbook writes it.
func valueSource(v any) string {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for k, x := range v {
				s, _ := x.(string)
				switch k {
				case RefKey, FailureKey, ItemKey, ElemKey:
					return "@" + s
				case StatusKey:
					return "(status @" + s + ")"
				case DefaultKey, CountKey:
					parts, ok := x.([]any)
					if !ok {
						parts = []any{x}
					}
					out := make([]string, len(parts))
					for i, p := range parts {
						out[i] = valueSource(p)
					}
					return "(" + strings.TrimPrefix(k, "$") + " " + strings.Join(out, " ") + ")"
				case FilterKey, AnyKey, AllKey:
					spec, _ := x.(map[string]any)
					as, _ := spec["as"].(string)
					where := "?"
					if c, err := condOf(spec["where"]); err == nil {
						where = c.String()
					}
					return "(" + strings.TrimPrefix(k, "$") + " " + valueSource(spec["list"]) + " :as @" + as + " " + where + ")"
				case InputKey:
					return "$" + s
				case StrKey:
					parts, _ := x.([]any)
					out := make([]string, len(parts))
					for i, p := range parts {
						out[i] = valueSource(p)
					}
					return "(str " + strings.Join(out, " ") + ")"
				}
			}
		}
		var b strings.Builder
		b.WriteString("{")
		keys := slices.Sorted(maps.Keys(v))
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(":" + k + " " + valueSource(v[k]))
		}
		b.WriteString("}")
		return b.String()
	case []any:
		out := make([]string, len(v))
		for i, item := range v {
			out[i] = valueSource(item)
		}
		return "[" + strings.Join(out, " ") + "]"
	case nil:
		return "nil"
	}
	return string(appendJSON(nil, v))
}

// Refs calls fn with the value of every $ref in the condition.
func (c *Cond) Refs(fn func(string)) {
	for _, arg := range c.Args {
		if sub, ok := arg.(*Cond); ok {
			sub.Refs(fn)
		} else {
			ValueRefs(arg, fn)
		}
	}
}

// ValueRefs calls fn with the value of every $ref in a plan value: what a
// runtime reads of other steps' results, when the plan's edges do not say
// (a failure hook's).
func ValueRefs(v any, fn func(string)) {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v[RefKey].(string); ok && len(v) == 1 {
			fn(ref)
			return
		}
		for _, item := range v {
			ValueRefs(item, fn)
		}
	case []any:
		for _, item := range v {
			ValueRefs(item, fn)
		}
	}
}
