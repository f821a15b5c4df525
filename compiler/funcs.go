package compiler

import (
	"slices"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// EdgeSettle is the kind of edge a status test makes (docs/design/language.md
// v1.4, docs/design/semantics.md section 15): the step waits until its
// source has settled, whatever it settled with, and is not skipped when
// the source failed or was skipped. A data edge between the same steps
// wins over it; it wins over a sequence edge.
const EdgeSettle = "settle"

// elemBinding is the element a (filter|any|all LIST :as @e COND) binds
// inside COND, with the schema of the list's items (nil when unknown).
type elemBinding struct {
	name   string
	schema map[string]any
}

// elemScope finds the innermost element named name in scope.
func (a *analysis) elemScope(name string) (map[string]any, bool) {
	for i := len(a.elems) - 1; i >= 0; i-- {
		if a.elems[i].name == name {
			return a.elems[i].schema, true
		}
	}
	return nil, false
}

// funcOperand checks a value form of v1.4 read by step s, in a condition
// (inCond) or an argument, and says what is known of its type. Its
// references resolve and add their edges, as any operand's do.
func (a *analysis) funcOperand(s *step, f *lang.Func, inCond bool) operand {
	op := operand{v: f, ok: true}
	switch f.Name {
	case lang.FormStatus:
		op.status = true
		op.types = []string{"string"}
		op.ok = a.statusOperand(s, f, inCond)
	case lang.FormDefault:
		op = a.defaultOperand(s, f, inCond)
	case lang.FormCount:
		op.types = []string{"integer"}
		if !a.funcArity(f, 1, "a list, as in (count @hosts.items)") {
			a.funcParts(s, f, inCond)
			return op
		}
		a.listOperand(s, f, f.Args[0], inCond)
	default: // filter, any, all
		op = a.elementOperand(s, f, inCond)
	}
	return op
}

// funcArity reports a form given the wrong number of values (E041).
func (a *analysis) funcArity(f *lang.Func, n int, want string) bool {
	if len(f.Args) == n {
		return true
	}
	a.diags.Errorf(lang.EBadOption, f.Span, "(%s ...) takes %s; found %d values", f.Name, want, len(f.Args))
	return false
}

// funcParts checks the values of a malformed form anyway, so that the
// bindings it reads count as used and no cascade follows.
func (a *analysis) funcParts(s *step, f *lang.Func, inCond bool) {
	for _, v := range f.Args {
		a.anyOperand(s, v, inCond)
	}
}

// anyOperand checks a value standing as an operand of a v1.4 form.
func (a *analysis) anyOperand(s *step, v lang.Value, inCond bool) operand {
	if f, ok := v.(*lang.Func); ok {
		return a.funcOperand(s, f, inCond)
	}
	return a.operand(s, v)
}

// statusOperand checks (status @x): one bare reference to a step, read in
// a condition or a hook. It adds the settle edge.
func (a *analysis) statusOperand(s *step, f *lang.Func, inCond bool) bool {
	if !a.funcArity(f, 1, "one reference to a step, as in (status @review)") {
		a.funcParts(s, f, inCond)
		return false
	}
	ref, ok := f.Args[0].(*lang.Ref)
	if !ok || len(ref.Path) > 0 {
		d := a.diags.Errorf(lang.EBadOption, f.Args[0].Range(), "(status ...) takes a bare reference to a step, as in (status @review); found %s", describeValue(f.Args[0]))
		if ok {
			d.WithFix("test the step @"+ref.Name, lang.Edit{Range: ref.Span, Text: "@" + ref.Name})
			a.resolve(s, &lang.Ref{Name: ref.Name, NameRange: ref.NameRange, Span: ref.NameRange})
		}
		return false
	}
	if _, item := a.items[ref.Name]; item {
		a.diags.Errorf(lang.EBadOption, ref.Span, "(status ...) tests a step; @%s is the element of a for-each", ref.Name)
		return false
	}
	if _, elem := a.elemScope(ref.Name); elem || a.loopList != nil || ref.Name == failureBinding || ref.Name == failuresBinding {
		a.diags.Errorf(lang.EBadOption, ref.Span, "(status ...) tests a step; @%s is not one", ref.Name)
		return false
	}
	if !inCond && !s.hook {
		a.diags.Errorf(lang.EBadOption, f.Span, "(status @%s) is read in a condition (:when, :gate-when) or a hook: a step's arguments are known only when the steps they read have succeeded", ref.Name)
		a.resolve(s, ref)
		return false
	}
	target := a.resolve(s, ref)
	if target == nil {
		return false
	}
	if target.hook {
		a.diags.Errorf(lang.EOnFailure, ref.NameRange, "@%s is a hook of (on-failure ...), which runs only after the runbook has ended; no step can test its status", ref.Name)
		return false
	}
	if levels(target, s.loop) > 0 {
		a.diags.Errorf(lang.EBadOption, ref.Span, "@%s is the list of a for-each's results, which has no one status; test its elements with (any @%s :as @r ...) or (count ...)", ref.Name, ref.Name)
		return false
	}
	if !s.hook {
		a.edges.addRef(target, s, EdgeSettle, ref.Span)
	}
	return true
}

// checkStatusLiteral reports (E056) a status test compared with a string
// that is no status: the condition could never hold, or never fail.
func (a *analysis) checkStatusLiteral(x, y operand) {
	for _, pair := range [][2]operand{{x, y}, {y, x}} {
		str, ok := pair[1].v.(*lang.String)
		if !pair[0].status || !ok || slices.Contains(lang.StepStatuses, str.Value) {
			continue
		}
		close := lang.Suggest(strings.ToLower(str.Value), lang.StepStatuses)
		if len(close) == 0 && len(str.Value) >= 3 {
			for _, st := range lang.StepStatuses {
				if strings.HasPrefix(st, strings.ToLower(str.Value[:3])) {
					close = append(close, st)
				}
			}
		}
		a.diags.Errorf(lang.EUnknownStatus, str.Span, "%s is not a status a step settles with (statuses: %s)", str.Raw, strings.Join(lang.StepStatuses, ", ")).
			WithReplacements(str.Span, str.Raw, close, strconv.Quote)
	}
}

// defaultOperand checks (default REF VALUE): REF is a reference, which
// may be missing without a warning; VALUE's type must be one REF's schema
// admits (E050).
func (a *analysis) defaultOperand(s *step, f *lang.Func, inCond bool) operand {
	op := operand{v: f, ok: true}
	if !a.funcArity(f, 2, `a reference and the value to take when it is missing, as in (default @review.decision "revoke")`) {
		a.funcParts(s, f, inCond)
		op.ok = false
		return op
	}
	ref, isRef := f.Args[0].(*lang.Ref)
	if !isRef {
		a.diags.Errorf(lang.EBadOption, f.Args[0].Range(), "(default ...) starts with a reference, as in (default @review.decision \"revoke\"); found %s", describeValue(f.Args[0]))
		a.anyOperand(s, f.Args[0], inCond)
		a.anyOperand(s, f.Args[1], inCond)
		op.ok = false
		return op
	}
	a.mayBeMissing++
	schema, _, ok := a.reference(s, ref)
	a.mayBeMissing--
	fallback := a.anyOperand(s, f.Args[1], inCond)
	op.types = verbs.Types(schema)
	op.items = verbs.Types(verbs.Items(schema, 0))
	op.schema = schema
	if !ok || !fallback.ok || op.types == nil || fallback.types == nil {
		if op.types == nil {
			op.types = fallback.types
		}
		return op
	}
	if _, null := f.Args[1].(*lang.Null); null {
		return op
	}
	for _, t := range fallback.types {
		if verbs.TypeAdmits(op.types, t) {
			return op
		}
	}
	d := a.diags.Errorf(lang.ETypeConflict, f.Args[1].Range(), "(default @%s ...) takes %s when @%s is missing, but @%s is %s: a default has the type of what it stands for",
		ref.PathString(), strings.Join(fallback.types, " or "), ref.PathString(), ref.PathString(), strings.Join(op.types, " or "))
	if zero, ok := zeroValue(op.types); ok {
		d.WithFix("default to "+zero, lang.Edit{Range: f.Args[1].Range(), Text: zero})
	}
	return op
}

// listOperand checks the list of count, filter, any or all: it must be an
// array when its type is known (E054). It returns the schema of its
// items, nil when unknown.
func (a *analysis) listOperand(s *step, f *lang.Func, v lang.Value, inCond bool) map[string]any {
	var op operand
	var schema map[string]any
	switch v := v.(type) {
	case *lang.Ref:
		// A reference may name a list of a for-each's results, which
		// refSchemaFrom types as an array of the step's results.
		sch, _, ok := a.reference(s, v)
		op = operand{v: v, ok: ok, types: verbs.Types(sch)}
		schema = sch
	case *lang.Input:
		a.inputs.use(&a.diags, v, typeSchema([]string{"array"}), "("+f.Name+" ...)")
		return nil
	default:
		op = a.anyOperand(s, v, inCond)
		schema = op.schema
	}
	if op.ok && op.types != nil && !slices.Contains(op.types, "array") {
		a.diags.Errorf(lang.EBadList, v.Range(), "(%s ...) goes through a list, but %s is %s", f.Name, valueText(v), strings.Join(op.types, " or "))
		return nil
	}
	return verbs.Items(schema, 0)
}

// elementOperand checks (filter|any|all LIST :as @e COND): @e is bound
// inside COND only, typed by LIST's items. filter is a list of the same
// items, any and all are booleans.
func (a *analysis) elementOperand(s *step, f *lang.Func, inCond bool) operand {
	op := operand{v: f, ok: true, types: []string{"boolean"}}
	example := "(" + f.Name + ` @hosts.items :as @h (= @h.env "production"))`
	var name string
	if f.As == nil {
		a.diags.Errorf(lang.EBadOption, f.HeadRange, "(%s ...) names each element with :as, as in %s", f.Name, example)
	} else if ref, ok := f.As.Value.(*lang.Ref); !ok || len(ref.Path) > 0 {
		a.diags.Errorf(lang.EBadOption, f.As.Value.Range(), ":as takes a bare reference that names the element, as in %s", example)
	} else if _, bound := a.bindings[ref.Name]; bound || a.items[ref.Name] != nil || ref.Name == failureBinding || ref.Name == failuresBinding {
		a.diags.Errorf(lang.EDuplicateBinding, ref.NameRange, "@%s is taken: the element of (%s ...) needs a name of its own", ref.Name, f.Name)
	} else {
		name = ref.Name
	}
	if len(f.Args) != 2 {
		a.funcArity(f, 2, "a list, :as @e and a condition, as in "+example)
		a.funcParts(s, f, inCond)
		op.ok = false
		return op
	}
	items := a.listOperand(s, f, f.Args[0], inCond)
	if f.Name == lang.FormFilter {
		op.types = []string{"array"}
		op.schema = map[string]any{"type": "array"}
		if items != nil {
			op.schema["items"] = items
			op.items = verbs.Types(items)
		}
	}
	a.elems = append(a.elems, elemBinding{name: name, schema: items})
	defer func() { a.elems = a.elems[:len(a.elems)-1] }()
	switch c := f.Args[1].(type) {
	case *lang.Cond:
		a.condition(s, c)
	case *lang.Func:
		if c.Name == lang.FormAny || c.Name == lang.FormAll {
			a.funcOperand(s, c, true)
			break
		}
		a.notACondition(s, c, "("+f.Name+" ...) ends with a condition")
	default:
		a.notACondition(s, c, "("+f.Name+" ...) ends with a condition")
	}
	return op
}

// warnOptional warns (W004) about a reference that reads a field its
// producer's output_schema does not require: when the result leaves it
// out, the step fails MISSING_REQUIRED_CONTEXT. The fix wraps the
// reference in (default ...).
func (a *analysis) warnOptional(target *step, ref *lang.Ref) {
	schema := target.outputSchema()
	if schema == nil || len(ref.Path) == 0 || ref.Path[0].IsIndex {
		return
	}
	a.warnOptionalIn(schema.Raw(), func() string { return "the result of " + quote(producerName(target)) }, ref)
}

// warnOptionalIn is warnOptional for a reference whose name stands for
// root, which what names in the message: asked for only then, since every
// reference with a path is checked (BENCHMARKS.md, "Compile under 2 s").
func (a *analysis) warnOptionalIn(root map[string]any, what func() string, ref *lang.Ref) {
	cur := root
	for _, p := range ref.Path {
		if cur == nil {
			return
		}
		if p.IsIndex {
			cur = verbs.Items(cur, p.Index)
			continue
		}
		field, ok := verbs.Field(cur, p.Field)
		if !ok {
			return
		}
		if !requires(cur, p.Field) {
			d := a.diags.Warnf(lang.WOptionalField, ref.Span, "@%s may be missing: %q is not a required field of %s; the step would fail MISSING_REQUIRED_CONTEXT", ref.PathString(), p.Field, what())
			if zero, ok := zeroValue(verbs.Types(schemaAt(root, ref.Path))); ok {
				text := "(default @" + ref.PathString() + " " + zero + ")"
				d.WithFix("take "+zero+" when it is missing: "+text, lang.Edit{Range: ref.Span, Text: text})
			}
			return
		}
		cur = field
	}
}

// requires reports whether an object schema lists field as required.
func requires(schema map[string]any, field string) bool {
	switch req := schema["required"].(type) {
	case []any:
		for _, r := range req {
			if r == field {
				return true
			}
		}
	case []string:
		return slices.Contains(req, field)
	}
	return false
}

// producerName names the verb a step calls, for messages.
func producerName(target *step) string {
	switch {
	case target.def != nil:
		return target.def.FullName()
	case target.frozen != nil:
		return target.frozen.Verb
	}
	return target.key
}

// zeroValue is the runbook text of the plainest value of a type, for a
// default a fix writes: "" for a string, 0 for a number, false, [] or {}.
// ok is false when the types say nothing or more than one thing.
func zeroValue(types []string) (string, bool) {
	types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "null" })
	if len(types) != 1 {
		return "", false
	}
	switch types[0] {
	case "string":
		return `""`, true
	case "integer", "number":
		return "0", true
	case "boolean":
		return "false", true
	case "array":
		return "[]", true
	case "object":
		return "{}", true
	}
	return "", false
}

// schemaAt is the schema a path reaches from root; nil when the schema
// does not say.
func schemaAt(root map[string]any, path []lang.PathStep) map[string]any {
	cur := root
	for _, p := range path {
		if cur == nil {
			return nil
		}
		if p.IsIndex {
			cur = verbs.Items(cur, p.Index)
			continue
		}
		field, ok := verbs.Field(cur, p.Field)
		if !ok {
			return nil
		}
		cur = field
	}
	return cur
}
