package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// operatorSynonyms maps what other languages write to the operator meant,
// so a mistyped operator gets the one fix that repairs it (E052).
var operatorSynonyms = map[string]string{
	"==": lang.OpEq, "eq": lang.OpEq, "is": lang.OpEq, "equals": lang.OpEq,
	"<>": lang.OpNe, "ne": lang.OpNe, "neq": lang.OpNe, "not=": lang.OpNe, "=!": lang.OpNe,
	"lt": lang.OpLt, "le": lang.OpLe, "lte": lang.OpLe, "=<": lang.OpLe,
	"gt": lang.OpGt, "ge": lang.OpGe, "gte": lang.OpGe, "=>": lang.OpGe,
	"&&": lang.OpAnd, "||": lang.OpOr, "!": lang.OpNot,
	"contains": lang.OpIn, "member": lang.OpIn, "one-of": lang.OpIn,
	"exist": lang.OpExists, "defined": lang.OpExists, "present": lang.OpExists, "some": lang.OpExists,
}

// checkWhen checks a step's :when and freezes its condition. Each
// reference in it adds a data edge, as an argument's does: the condition
// is evaluated once what it reads is known.
func (a *analysis) checkWhen(s *step) {
	if s.whenArg == nil {
		return
	}
	s.when = a.topCondition(s, s.whenArg.Value, ":when")
}

// topCondition checks the condition of a step option (:when, :gate-when)
// and freezes it; nil when v is not a condition. The steps whose status
// it tests are joined by settle edges, every reference to them included.
func (a *analysis) topCondition(s *step, v lang.Value, option string) *Cond {
	a.settling = map[*step]bool{}
	defer func() { a.settling = nil }()
	lang.Walk(v, func(inner lang.Value) {
		if f, ok := inner.(*lang.Func); ok && f.Name == lang.FormStatus && len(f.Args) == 1 {
			if ref, ok := f.Args[0].(*lang.Ref); ok && a.bindings[ref.Name] != nil && a.items[ref.Name] == nil {
				a.settling[a.bindings[ref.Name]] = true
			}
		}
	})
	switch c := v.(type) {
	case *lang.Cond:
		return a.condition(s, c)
	case *lang.Func:
		if c.Name == lang.FormAny || c.Name == lang.FormAll {
			return a.elementCondition(s, c)
		}
	}
	a.notACondition(s, v, option+" takes a condition, (OP ARG...)")
	return nil
}

// elementCondition checks (any ...) or (all ...) standing as a condition,
// frozen as (= (any ...) true).
func (a *analysis) elementCondition(s *step, f *lang.Func) *Cond {
	a.funcOperand(s, f, true)
	return &Cond{Op: lang.OpEq, Args: []any{a.freezeValue(f), true}}
}

// notACondition reports a value where a condition belongs (E041). A lone
// boolean (a reference or input of unknown or boolean type, or a literal)
// gets the fix that compares it with true.
func (a *analysis) notACondition(s *step, v lang.Value, what string) {
	d := a.diags.Errorf(lang.EBadOption, v.Range(), "%s, as in (= @check.ok true) or (< @lag.seconds 5); found %s", what, describeValue(v))
	types := a.operandTypesQuiet(s, v)
	switch v.(type) {
	case *lang.Ref, *lang.Input:
		if types == nil || slices.Equal(types, []string{"boolean"}) {
			text := "(= " + valueText(v) + " true)"
			d.WithFix("compare it with true: "+text, lang.Edit{Range: v.Range(), Text: text})
		}
	}
	// Resolve what it refers to anyway, so that the step's edges and the
	// bindings it uses are known and no W001 follows.
	a.operandParts(s, v)
}

// condition checks a condition and returns its frozen form; it reports
// every problem (E052, E041, E050, E051) and returns what it could build.
func (a *analysis) condition(s *step, c *lang.Cond) *Cond {
	out := &Cond{Op: c.Op, Args: []any{}}
	if !lang.IsOperator(c.Op) {
		a.unknownOperator(c)
		for _, arg := range c.Args {
			if sub, ok := arg.(*lang.Cond); ok {
				a.condition(s, sub)
			} else {
				a.operand(s, arg)
			}
		}
		return out
	}
	switch c.Op {
	case lang.OpAnd, lang.OpOr, lang.OpNot:
		if c.Op == lang.OpNot && len(c.Args) != 1 {
			a.arity(c, "one condition")
		} else if c.Op != lang.OpNot && len(c.Args) < 2 {
			a.arity(c, "two or more conditions")
		}
		for _, arg := range c.Args {
			if f, ok := arg.(*lang.Func); ok && (f.Name == lang.FormAny || f.Name == lang.FormAll) {
				out.Args = append(out.Args, a.elementCondition(s, f))
				continue
			}
			sub, ok := arg.(*lang.Cond)
			if !ok {
				a.notACondition(s, arg, fmt.Sprintf("%s takes conditions", c.Op))
				continue
			}
			out.Args = append(out.Args, a.condition(s, sub))
		}
		return out
	case lang.OpExists:
		if len(c.Args) != 1 {
			a.arity(c, "one reference")
		}
		for _, arg := range c.Args {
			ref, ok := arg.(*lang.Ref)
			if !ok {
				a.diags.Errorf(lang.EBadOption, arg.Range(), "exists takes a reference, as in (exists @lookup.record); found %s", describeValue(arg))
			} else if target := a.bindings[ref.Name]; target != nil && levels(target, s.loop) > 0 && (len(ref.Path) == 0 || !ref.Path[0].IsIndex) {
				a.diags.Errorf(lang.EBadOption, ref.Span, "@%s is the list of a for-each's results, which always exists; test one of them, as in (exists @%s[0])", ref.Name, ref.Name)
			}
			a.mayBeMissing++
			a.operand(s, arg)
			a.mayBeMissing--
			out.Args = append(out.Args, a.freezeValue(arg))
		}
		return out
	}
	if len(c.Args) != 2 {
		a.arity(c, "two values")
	}
	ops := make([]operand, len(c.Args))
	for i, arg := range c.Args {
		ops[i] = a.operand(s, arg)
		out.Args = append(out.Args, a.freezeValue(arg))
	}
	if len(ops) != 2 {
		return out
	}
	switch c.Op {
	case lang.OpIn:
		a.checkIn(c, ops[0], ops[1])
	case lang.OpLt, lang.OpLe, lang.OpGt, lang.OpGe:
		for _, op := range ops {
			a.checkNumber(c, op)
		}
	default:
		a.checkComparable(c, ops[0], ops[1])
		a.checkStatusLiteral(ops[0], ops[1])
	}
	return out
}

// operand is one value of a comparison, with what the compiler knows of
// its type: nil when nothing says.
type operand struct {
	v     lang.Value
	types []string
	// items are the types of an array's elements, when known: for a
	// literal list, those of its items; for a reference, from its
	// schema's items.
	items []string
	ok    bool // false when the value was reported as malformed
	// schema is the value's schema when known: a reference's, a
	// (default ...)'s, a (filter ...)'s.
	schema map[string]any
	// status marks (status @x), whose value is one of lang.StepStatuses.
	status bool
}

// operand checks one operand (its references resolve and add data edges,
// its inputs are registered) and says what is known of its type.
func (a *analysis) operand(s *step, v lang.Value) operand {
	op := operand{v: v, ok: true}
	switch v := v.(type) {
	case *lang.Func:
		return a.funcOperand(s, v, true)
	case *lang.Ref:
		schema, _, ok := a.reference(s, v)
		op.ok = ok
		op.types = verbs.Types(schema)
		op.items = verbs.Types(verbs.Items(schema, 0))
		op.schema = schema
	case *lang.Input:
		a.inputs.use(&a.diags, v, nil, ":when")
		op.types = a.inputs.types(v.Name)
	case *lang.Str:
		a.operandParts(s, v)
		op.types = []string{"string"}
	case *lang.Call:
		a.diags.Errorf(lang.EBadOption, v.Span, "a condition cannot hold a call; give the call a step of its own with :as, and compare its result")
		op.ok = false
	case *lang.Cond:
		a.diags.Errorf(lang.EBadOption, v.Span, "(%s ...) is a condition, which is not a value; conditions combine with and, or and not", v.Op)
		op.ok = false
	case *lang.Bad:
		op.ok = false
	case *lang.List:
		a.operandParts(s, v)
		op.types = []string{"array"}
		for _, item := range v.Items {
			if isLiteral(item) {
				op.items = append(op.items, verbs.JSONType(jsonValue(item)))
			} else {
				op.items = nil // something not known until run time
				break
			}
		}
		slices.Sort(op.items)
		op.items = slices.Compact(op.items)
	default:
		a.operandParts(s, v)
		op.types = []string{verbs.JSONType(jsonValue(v))}
	}
	return op
}

// operandParts checks what a composite operand holds: the references and
// inputs inside a list, a map or (str ...).
func (a *analysis) operandParts(s *step, v lang.Value) {
	var walk func(inner lang.Value)
	walk = func(inner lang.Value) {
		switch x := inner.(type) {
		case *lang.Ref:
			a.reference(s, x)
		case *lang.Input:
			a.inputs.use(&a.diags, x, nil, ":when")
		case *lang.Call, *lang.Cond, *lang.Func:
			if inner != v {
				a.operand(s, inner)
				return
			}
			// A form's own operands are its to check: a v1.4 form's
			// element is in scope only inside it.
			if f, ok := inner.(*lang.Func); ok {
				a.funcOperand(s, f, true)
				return
			}
		case *lang.Str:
			for _, p := range x.Parts {
				walk(p)
			}
		case *lang.List:
			for _, item := range x.Items {
				walk(item)
			}
		case *lang.Map:
			for _, e := range x.Entries {
				walk(e.Value)
			}
		}
	}
	walk(v)
}

// operandTypesQuiet is what the schemas say of v's type, without
// reporting anything: for choosing a fix.
func (a *analysis) operandTypesQuiet(s *step, v lang.Value) []string {
	switch v := v.(type) {
	case *lang.Ref:
		if elem, ok := a.elemScope(v.Name); ok {
			return verbs.Types(schemaAt(elem, v.Path))
		}
		target, ok := a.bindings[v.Name]
		if !ok || target.outputSchema() == nil {
			return nil
		}
		mark := len(a.diags)
		schema, _ := a.refSchema(target, v)
		a.diags = a.diags[:mark]
		return verbs.Types(schema)
	case *lang.Input:
		return a.inputs.types(v.Name)
	}
	return nil
}

// checkComparable reports (E050) an = or != between values whose types
// have nothing in common: they can never be equal, so the condition is a
// mistake, such as comparing a string with a number. An input takes the
// other operand's type.
func (a *analysis) checkComparable(c *lang.Cond, x, y operand) {
	if !x.ok || !y.ok {
		return
	}
	if in, ok := x.v.(*lang.Input); ok && y.types != nil {
		a.inputs.use(&a.diags, in, typeSchema(y.types), ":when")
		return
	}
	if in, ok := y.v.(*lang.Input); ok && x.types != nil {
		a.inputs.use(&a.diags, in, typeSchema(x.types), ":when")
		return
	}
	if x.types == nil || y.types == nil || len(intersect(x.types, y.types)) > 0 {
		return
	}
	a.diags.Errorf(lang.ETypeConflict, c.Span, "%s compares %s, which is %s, with %s, which is %s: values of different types are never equal",
		c.Op, valueText(x.v), strings.Join(x.types, " or "), valueText(y.v), strings.Join(y.types, " or "))
}

// checkNumber reports (E051) an operand of an ordering operator that is
// not a number. An input passed to one becomes a number.
func (a *analysis) checkNumber(c *lang.Cond, x operand) {
	if !x.ok {
		return
	}
	if in, ok := x.v.(*lang.Input); ok && (x.types == nil || slices.Contains(x.types, "number") || slices.Contains(x.types, "integer")) {
		a.inputs.use(&a.diags, in, typeSchema([]string{"number"}), ":when")
		return
	}
	if x.types == nil || slices.Contains(x.types, "number") || slices.Contains(x.types, "integer") {
		return
	}
	a.diags.Errorf(lang.EOrderNotNumber, x.v.Range(), "%s orders numbers, but %s is %s", c.Op, valueText(x.v), strings.Join(x.types, " or "))
}

// checkIn reports (E050) an `in` whose second operand is not a list, or
// whose list can hold nothing of the first operand's type.
func (a *analysis) checkIn(c *lang.Cond, x, list operand) {
	if !x.ok || !list.ok {
		return
	}
	if in, ok := list.v.(*lang.Input); ok {
		a.inputs.use(&a.diags, in, typeSchema([]string{"array"}), ":when")
		return
	}
	if list.types != nil && !slices.Contains(list.types, "array") {
		a.diags.Errorf(lang.ETypeConflict, list.v.Range(), "in looks for a value in a list, but %s is %s", valueText(list.v), strings.Join(list.types, " or "))
		return
	}
	if x.types == nil || list.items == nil || len(intersect(x.types, list.items)) > 0 {
		return
	}
	a.diags.Errorf(lang.ETypeConflict, c.Span, "in looks for %s, which is %s, in a list of %s: values of different types are never equal",
		valueText(x.v), strings.Join(x.types, " or "), strings.Join(list.items, " or "))
}

// arity reports an operator given the wrong number of operands (E041).
func (a *analysis) arity(c *lang.Cond, want string) {
	a.diags.Errorf(lang.EBadOption, c.Span, "%s takes %s, found %d", c.Op, want, len(c.Args))
}

// unknownOperator reports an operator the language does not have (E052),
// with the one meant when it can tell: a synonym from another language
// (== for =, && for and) or a close spelling.
func (a *analysis) unknownOperator(c *lang.Cond) {
	d := a.diags.Errorf(lang.EUnknownOperator, c.OpRange, "unknown operator %q (operators: %s)", c.Op, strings.Join(lang.Operators, " "))
	var close []string
	if meant, ok := operatorSynonyms[strings.ToLower(c.Op)]; ok {
		close = []string{meant}
	} else {
		close = lang.Suggest(strings.ToLower(c.Op), lang.Operators)
	}
	d.WithReplacements(c.OpRange, c.Op, close, nil)
}

// typeSchema is a schema admitting the given JSON types.
func typeSchema(types []string) map[string]any {
	list := make([]any, len(types))
	for i, t := range types {
		list[i] = t
	}
	return map[string]any{"type": list}
}

// valueText renders a value as written, for messages.
func valueText(v lang.Value) string {
	switch v := v.(type) {
	case *lang.Ref:
		return "@" + v.PathString()
	case *lang.Input:
		return "$" + v.Name
	case *lang.String:
		return v.Raw
	case *lang.Int:
		return v.Raw
	case *lang.Decimal:
		return v.Raw
	case *lang.Bool:
		return fmt.Sprint(v.Value)
	case *lang.Null:
		return "nil"
	case *lang.Str:
		return "(str ...)"
	case *lang.Func:
		return "(" + v.Name + " ...)"
	case *lang.List:
		return "the list"
	case *lang.Map:
		return "the map"
	}
	return "the value"
}

// describeValue names a value's kind and text, for messages.
func describeValue(v lang.Value) string {
	switch v := v.(type) {
	case *lang.Ref:
		return "reference @" + v.PathString()
	case *lang.Input:
		return "input $" + v.Name
	case *lang.Call:
		return "a call (" + v.Verb + " ...)"
	case *lang.Cond:
		return "(" + v.Op + " ...)"
	case *lang.Str:
		return "(str ...)"
	case *lang.Func:
		return "(" + v.Name + " ...)"
	case *lang.List:
		return "a list"
	case *lang.Map:
		return "a map"
	}
	return valueText(v)
}
