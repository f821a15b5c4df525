package compiler

import (
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// lowerNested registers the calls nested in s's arguments as steps of their
// own and replaces each, in s's arguments, by a reference to its result:
// to the field its verb's `returns:` names, or to the whole result
// (docs/design/language.md v1.1). From here on the step is checked as if it had been
// written flat, so a nested call and its hand-flattened twin compile to
// the same plan. The AST is left as it was: the formatter and other tools
// read it after the compiler.
func (a *analysis) lowerNested(s *step, offset int) {
	for i, arg := range s.args {
		if !hasNestedCall(arg.Value) {
			continue
		}
		lowered := *arg
		lowered.Value = a.lower(s.file, arg.Value, offset)
		s.args[i] = &lowered
	}
}

func hasNestedCall(v lang.Value) bool {
	found := false
	lang.Walk(v, func(v lang.Value) {
		if _, ok := v.(*lang.Call); ok {
			found = true
		}
	})
	return found
}

// lower returns v with every nested call replaced by a reference to its
// step, copying only the lists and maps on the way to one.
func (a *analysis) lower(f *lang.File, v lang.Value, offset int) lang.Value {
	switch v := v.(type) {
	case *lang.Call:
		return a.nestedRef(a.addCall(f, v, offset))
	case *lang.List:
		if !hasNestedCall(v) {
			return v
		}
		out := &lang.List{Span: v.Span, Items: make([]lang.Value, len(v.Items))}
		for i, item := range v.Items {
			out.Items[i] = a.lower(f, item, offset)
		}
		return out
	case *lang.Map:
		if !hasNestedCall(v) {
			return v
		}
		out := &lang.Map{Span: v.Span, Entries: make([]*lang.Arg, len(v.Entries))}
		for i, e := range v.Entries {
			lowered := *e
			lowered.Value = a.lower(f, e.Value, offset)
			out.Entries[i] = &lowered
		}
		return out
	case *lang.Str:
		if !hasNestedCall(v) {
			return v
		}
		out := &lang.Str{Span: v.Span, HeadRange: v.HeadRange, Parts: make([]lang.Value, len(v.Parts))}
		for i, p := range v.Parts {
			out.Parts[i] = a.lower(f, p, offset)
		}
		return out
	}
	return v
}

// nestedRef is the reference a nested call's value becomes. It points at
// the call, so that diagnostics about the value (E033, E022) show the call.
// A `returns` field its output_schema does not have is E034, and the
// reference is then to the whole result, so that the mistake is reported
// once.
func (a *analysis) nestedRef(child *step) lang.Value {
	c := child.call
	ref := &lang.Ref{Name: child.key, NameRange: c.VerbRange, Span: c.Span}
	a.nested[ref] = child
	if child.binding != nil {
		// The call around it uses the result: the binding is not unused.
		a.used[child.binding.Name] = true
	}
	if def := child.def; def != nil && def.Returns != "" {
		if a.checkReturns(def, c) {
			ref.Path = []lang.PathStep{{Field: def.Returns, Span: c.VerbRange}}
		}
	}
	return ref
}

// checkReturns reports (E034) a verb whose `returns` field its
// output_schema rules out, at the nested call, with the definition's
// `returns` as the related place.
func (a *analysis) checkReturns(def *verbs.Definition, c *lang.Call) bool {
	if def.OutputSchema == nil {
		return true // nothing to check against; the runtime resolves it
	}
	schema := def.OutputSchema.Raw()
	if _, ok := verbs.Field(schema, def.Returns); ok {
		return true
	}
	if extra, ok := schema["additionalProperties"]; ok && extra != false {
		return true // the schema allows fields it does not list
	}
	fields := propertyNames(schema)
	if len(fields) == 0 {
		return true // the schema does not list fields
	}
	a.diags.Errorf(lang.EReturnsField, c.VerbRange,
		"verb %q returns field %q, which its output_schema does not have (fields: %s); the value stands for the whole result",
		def.FullName(), def.Returns, strings.Join(fields, ", ")).
		WithRelated(def.FieldRange("returns"), "returns is declared here")
	return false
}

// lastIndex is the highest Index of c and the calls nested in it.
func lastIndex(c *lang.Call) int {
	last := c.Index
	for _, arg := range c.Args {
		lang.Walk(arg.Value, func(v lang.Value) {
			if n, ok := v.(*lang.Call); ok {
				last = max(last, n.Index)
			}
		})
	}
	return last
}
