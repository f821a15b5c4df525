package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// Conditions (docs/language.md, "The plan format"): a step's :when is
// decided when the step would become ready, inside the advance, from
// results and inputs only; no handler is called. False skips the step
// (CONDITION_FALSE); an operand of the wrong type fails it
// (SCHEMA_VALIDATION_FAILED), and so does a reference whose path is
// missing outside exists (MISSING_REQUIRED_CONTEXT), as an argument's
// would.

// evalCond decides a condition with b.
func evalCond(c *compiler.Cond, b *Binder) (bool, *handler.Error) {
	switch c.Op {
	case lang.OpAnd, lang.OpOr:
		for _, arg := range c.Args {
			sub, ok := arg.(*compiler.Cond)
			if !ok {
				return false, handler.Errorf(rbtype.CodeInternal, "an operand of %q is not a condition", c.Op)
			}
			v, err := evalCond(sub, b)
			if err != nil {
				return false, err
			}
			if v == (c.Op == lang.OpOr) {
				return v, nil // decided: stop here
			}
		}
		return c.Op == lang.OpAnd, nil
	case lang.OpNot:
		if len(c.Args) != 1 {
			return false, handler.Errorf(rbtype.CodeInternal, "not takes one condition, not %d", len(c.Args))
		}
		sub, ok := c.Args[0].(*compiler.Cond)
		if !ok {
			return false, handler.Errorf(rbtype.CodeInternal, "the operand of not is not a condition")
		}
		v, err := evalCond(sub, b)
		return !v, err
	case lang.OpExists:
		if len(c.Args) != 1 {
			return false, handler.Errorf(rbtype.CodeInternal, "exists takes one reference, not %d", len(c.Args))
		}
		v, err := b.Resolve(c.Args[0])
		return err == nil && v != nil, nil // never fails: a missing path does not exist
	}
	if len(c.Args) != 2 {
		return false, handler.Errorf(rbtype.CodeInternal, "%s takes two operands, not %d", c.Op, len(c.Args))
	}
	x, err := b.Resolve(c.Args[0])
	if err != nil {
		return false, handler.Classify(err)
	}
	y, err := b.Resolve(c.Args[1])
	if err != nil {
		return false, handler.Classify(err)
	}
	switch c.Op {
	case lang.OpEq:
		return jsonEqual(x, y), nil
	case lang.OpNe:
		return !jsonEqual(x, y), nil
	case lang.OpIn:
		list, ok := y.([]any)
		if !ok {
			return false, handler.Errorf(rbtype.CodeSchemaValidationFailed, "(in ...) looks in a list, and %s is %s", compiler.Text([]any{y}), KindOf(y))
		}
		for _, item := range list {
			if jsonEqual(x, item) {
				return true, nil
			}
		}
		return false, nil
	case lang.OpLt, lang.OpLe, lang.OpGt, lang.OpGe:
		a, aok := number(x)
		bn, bok := number(y)
		if !aok || !bok {
			bad := x
			if aok {
				bad = y
			}
			return false, handler.Errorf(rbtype.CodeSchemaValidationFailed, "(%s ...) orders numbers, and %s is %s", c.Op, compiler.Text([]any{bad}), KindOf(bad))
		}
		cmp := a.Cmp(bn)
		switch c.Op {
		case lang.OpLt:
			return cmp < 0, nil
		case lang.OpLe:
			return cmp <= 0, nil
		case lang.OpGt:
			return cmp > 0, nil
		default:
			return cmp >= 0, nil
		}
	}
	return false, handler.Errorf(rbtype.CodeInternal, "unknown operator %q", c.Op)
}

// jsonEqual compares two JSON values: numbers by value (5 equals 5.0),
// arrays element by element, objects member by member.
func jsonEqual(x, y any) bool {
	if a, ok := number(x); ok {
		b, ok := number(y)
		return ok && a.Cmp(b) == 0
	}
	switch x := x.(type) {
	case nil:
		return y == nil
	case string:
		s, ok := y.(string)
		return ok && s == x
	case bool:
		v, ok := y.(bool)
		return ok && v == x
	case []any:
		l, ok := y.([]any)
		if !ok || len(l) != len(x) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], l[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		m, ok := y.(map[string]any)
		if !ok || len(m) != len(x) {
			return false
		}
		for k, v := range x {
			w, ok := m[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// number reads a JSON number as an exact decimal.
func number(v any) (*big.Rat, bool) {
	var text string
	switch v := v.(type) {
	case json.Number:
		text = string(v)
	case float64:
		return new(big.Rat).SetFloat64(v), true
	case int:
		return new(big.Rat).SetInt64(int64(v)), true
	case int64:
		return new(big.Rat).SetInt64(v), true
	default:
		return nil, false
	}
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		// An exponent far beyond float64's range would make the exact
		// decimal enormous (a result may hold 1e999999999): such a number
		// is compared as the float it rounds to.
		if exp, err := strconv.Atoi(text[i+1:]); err != nil || exp > maxExactExponent || exp < -maxExactExponent {
			f, err := strconv.ParseFloat(text, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, false
			}
			if math.IsInf(f, 0) {
				f = math.Copysign(math.MaxFloat64, f)
			}
			return new(big.Rat).SetFloat64(f), true
		}
	}
	r, ok := new(big.Rat).SetString(text)
	return r, ok
}

// maxExactExponent bounds the decimal exponents compared exactly.
const maxExactExponent = 400

// KindOf names a JSON value's type, for messages.
func KindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
