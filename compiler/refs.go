package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// resolve finds the step a reference names (E030 when none does), marks
// the binding used, and reports a step that depends on itself (E040).
func (a *analysis) resolve(s *step, ref *lang.Ref) *step {
	if target, ok := a.nested[ref]; ok {
		return target // a nested call's value: its step, named or not
	}
	target, ok := a.bindings[ref.Name]
	if !ok && a.unparsed.Bound[ref.Name] {
		return nil // defined in a call with a syntax error
	}
	if !ok {
		a.diags.Errorf(lang.EUndefinedBinding, ref.NameRange, "@%s is not defined by any step's :as", ref.Name).
			WithReplacements(ref.NameRange, "@"+ref.Name, prefixAll("@", lang.Suggest(ref.Name, a.bindingNames())), nil)
		return nil
	}
	a.used[ref.Name] = true
	if target == s {
		a.diags.Errorf(lang.ECycle, ref.NameRange, "dependency cycle: @%s depends on itself", ref.Name)
		return nil
	}
	return target
}

// bindingNames is only needed to suggest names for a mistake, so it is
// built on demand.
func (a *analysis) bindingNames() []string {
	names := make([]string, 0, len(a.bindings))
	for n := range a.bindings {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// reference resolves a reference made by step s, in an argument or a
// condition: it adds its data edge (a hook has none: it runs after the
// runbook has ended, and reads what completed) and walks its path through
// the producer's output_schema (E032). It returns the schema the path
// reaches (nil when the schema does not say) and the step, nil for
// @failure; ok is false when the reference did not resolve or its path
// was reported.
func (a *analysis) reference(s *step, ref *lang.Ref) (schema map[string]any, target *step, ok bool) {
	if m, ok := a.items[ref.Name]; ok {
		scope := s
		if s.hook {
			scope = nil
		}
		schema, ok = a.itemRef(scope, ref, m)
		return schema, nil, ok
	}
	if elem, ok := a.elemScope(ref.Name); ok {
		schema, ok = a.walkSchema(elem, func() (string, string) { return "element @" + ref.Name, "@" + ref.Name }, ref)
		if ok && a.mayBeMissing == 0 {
			a.warnOptionalIn(elem, func() string { return "an element of the list" }, ref)
		}
		return schema, nil, ok
	}
	if ref.Name == failureBinding || ref.Name == failuresBinding && a.bindings[ref.Name] == nil {
		if !s.hook {
			a.diags.Errorf(lang.EOnFailure, ref.NameRange, "@%s is bound only inside (on-failure ...): it describes the failure the hooks run after", ref.Name)
			return nil, nil, false
		}
		root := failureSchema
		if ref.Name == failuresBinding {
			root = failuresSchema
		}
		schema, ok = a.walkSchema(root, func() (string, string) { return ref.Name, ref.Name }, ref)
		return schema, nil, ok
	}
	if a.loopList != nil {
		schema, ok = a.loopReads(a.loopList, ref)
		return schema, nil, ok
	}
	target = a.resolve(s, ref)
	if target == nil {
		return nil, nil, false
	}
	if target.hook {
		if s.hook {
			a.diags.Errorf(lang.EOnFailure, ref.NameRange, "@%s is a hook of (on-failure ...), and a hook cannot refer to another: hooks run side by side, after the runbook has ended", ref.Name)
		} else {
			a.diags.Errorf(lang.EOnFailure, ref.NameRange, "@%s is a hook of (on-failure ...), which runs only after the runbook has ended; no step can use its result", ref.Name)
		}
		return nil, nil, false
	}
	if !s.hook {
		kind := EdgeData
		if a.settling[target] {
			kind = EdgeSettle
		}
		a.edges.addRef(target, s, kind, ref.Span)
	}
	schema, ok = a.refSchemaFrom(target, ref, s.loop)
	// A nested call's value is the field its verb's returns: names, which
	// the verb's author chose; W004 is about fields a runbook picks.
	if _, nested := a.nested[ref]; ok && !nested && !s.hook && a.mayBeMissing == 0 {
		a.warnOptional(target, ref)
	}
	return schema, target, ok
}

// checkRef resolves a reference in an argument (see reference) and checks
// its type against the parameter's (E033).
func (a *analysis) checkRef(s *step, param string, ref *lang.Ref, sub map[string]any) {
	have, target, ok := a.reference(s, ref)
	if !ok || have == nil || sub == nil {
		return
	}
	want, got := verbs.Types(sub), verbs.Types(have)
	if want == nil || got == nil {
		return
	}
	for _, g := range got {
		if verbs.TypeAdmits(want, g) {
			return
		}
	}
	what := "@" + ref.PathString() + " is"
	if _, nested := a.nested[ref]; nested {
		what = fmt.Sprintf("the nested call (%s) gives its whole result, which is", target.call.Verb)
		if len(ref.Path) > 0 {
			what = fmt.Sprintf("the nested call (%s) gives its result's %q, which is", target.call.Verb, ref.Path[0].Field)
		}
	}
	a.diags.Errorf(lang.ERefType, ref.Span, "%s %s, but :%s expects %s",
		what, strings.Join(got, " or "), param, strings.Join(want, " or "))
}

// refSchema follows a reference's path through the producer's
// output_schema and returns the schema at its end: nil when the schema
// does not say, ok=false after reporting a path the schema rules out.
//
// Declared properties are taken as the whole of an object unless
// additionalProperties allows more, so a misspelt field is caught here
// rather than resolving to nothing at run time.
func (a *analysis) refSchema(target *step, ref *lang.Ref) (map[string]any, bool) {
	schema := target.outputSchema()
	if schema == nil {
		return nil, true
	}
	return a.walkSchema(schema.Raw(), func() (string, string) {
		producer := target.key
		if target.def != nil {
			producer = target.def.FullName()
		} else if target.frozen != nil {
			producer = target.frozen.Verb
		}
		return "result of " + quote(producer), quote(producer)
	}, ref)
}

// walkSchema follows ref's path through cur, the schema of what ref.Name
// names; names gives root, which names that in messages ("result of
// "kyc.open-case""), and producer, which names it after a partial path.
// They are asked for only when a message needs them: every reference of a
// runbook is walked, and building them each time was about 120,000
// allocations in a 100k-step compile (BENCHMARKS.md, "Compile under 2 s").
func (a *analysis) walkSchema(cur map[string]any, names func() (root, producer string), ref *lang.Ref) (map[string]any, bool) {
	// walked(i) is the reference up to its i-th step, for messages: made
	// only for one, since every reference of a runbook is walked.
	walked := func(i int) string {
		w := "@" + ref.Name
		for _, p := range ref.Path[:i] {
			w += p.String()
		}
		return w
	}
	for i, p := range ref.Path {
		if cur == nil {
			return nil, true
		}
		types := verbs.Types(cur)
		if p.IsIndex {
			if types != nil && !slices.Contains(types, "array") {
				a.diags.Errorf(lang.EUnknownField, p.Span, "cannot index %s: it is %s, not an array", walked(i), strings.Join(types, " or "))
				return nil, false
			}
			if n, ok := cur[elementsKey].(int); ok && p.Index >= n {
				a.diags.Errorf(lang.EUnknownField, p.Span, "%s has %d elements, one for each element of its for-each's list; there is no %s", walked(i), n, p.String())
				return nil, false
			}
			cur = verbs.Items(cur, p.Index)
			continue
		}
		if types != nil && !slices.Contains(types, "object") {
			a.diags.Errorf(lang.EUnknownField, p.Span, "%s is %s, which has no field %q", walked(i), strings.Join(types, " or "), p.Field)
			return nil, false
		}
		if field, ok := verbs.Field(cur, p.Field); ok {
			cur = field
			continue
		}
		switch extra := cur["additionalProperties"].(type) {
		case map[string]any:
			cur = extra
			continue
		case bool:
			if extra {
				return nil, true
			}
		}
		fields := propertyNames(cur)
		if len(fields) == 0 {
			return nil, true // the schema does not list fields
		}
		root, producer := names()
		what := root
		if i > 0 {
			what = walked(i) + " (from " + producer + ")"
		}
		a.diags.Errorf(lang.EUnknownField, p.Span, "the %s has no field %q (fields: %s)", what, p.Field, strings.Join(fields, ", ")).
			WithReplacements(p.Span, p.String(), lang.Suggest(p.Field, fields), func(f string) string { return "." + f })
		return nil, false
	}
	return cur, true
}

func quote(s string) string { return `"` + s + `"` }

// addSequenceEdges resolves a call's :after references into sequence edges.
func (a *analysis) addSequenceEdges(s *step) {
	for _, ref := range s.after {
		if s.hook {
			a.diags.Errorf(lang.EOnFailure, ref.Span, ":after orders nothing in (on-failure ...): its hooks run side by side, once the runbook has ended")
			continue
		}
		if _, item := a.items[ref.Name]; item {
			a.diags.Errorf(lang.EBadOption, ref.Span, ":after takes steps; @%s is the element of a for-each", ref.Name)
			continue
		}
		target := a.resolve(s, ref)
		switch {
		case target == nil:
		case target.hook:
			a.diags.Errorf(lang.EOnFailure, ref.NameRange, "@%s is a hook of (on-failure ...), which runs only after the runbook has ended; no step can run after it", ref.Name)
		default:
			a.edges.addRef(target, s, EdgeSequence, ref.Span)
		}
	}
}
