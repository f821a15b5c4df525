package compiler

import (
	"maps"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// The options of (for-each ...) (docs/design/language.md v1.3).
const (
	loopOptionAs       = "as"
	loopOptionParallel = "parallel"
)

// elementsKey marks, in a schema the compiler builds for the list of a
// for-each's results, how many elements a list written out has, so that
// an index past them is E032. It is never written to a plan.
const elementsKey = "$elements"

// loop is a for-each under analysis.
type loop struct {
	form   *lang.ForEach
	file   *lang.File
	item   *lang.Ref // the :as reference; nil when missing (reported)
	key    string    // the item's name: the loop's key in the plan
	parent *loop
	// parallel is :parallel, 0 when not given.
	parallel int
	// list is the list frozen as a plan value; written is its items when
	// it is written out, which the compiler expands.
	list    any
	written []lang.Value
	// elem is the schema of an element, nil when nothing says.
	elem map[string]any
}

// encloses reports whether the loop is s's, or one s's loop stands in.
func (l *loop) encloses(s *step) bool {
	for m := s.loop; m != nil; m = m.parent {
		if m == l {
			return true
		}
	}
	return false
}

// inside reports whether loop m is l or stands in it.
func (l *loop) inside(m *loop) bool {
	for ; m != nil; m = m.parent {
		if m == l {
			return true
		}
	}
	return false
}

// addLoop registers a for-each: its item, then its body's calls as step
// templates and its nested for-each forms as loops of their own. It
// returns the highest index of its calls.
func (a *analysis) addLoop(f *lang.File, form *lang.ForEach, parent *loop, offset int) (last int) {
	l := &loop{form: form, file: f, parent: parent}
	a.readLoopOptions(l)
	if l.item != nil {
		l.key = l.item.Name
		a.bindItem(l)
	}
	a.loops = append(a.loops, l)
	saved := a.curLoop
	a.curLoop = l
	for _, n := range form.Body {
		switch n := n.(type) {
		case *lang.Call:
			a.addCall(f, n, offset)
			last = max(last, lastIndex(n))
		case *lang.ForEach:
			last = max(last, a.addLoop(f, n, l, offset))
		}
	}
	a.curLoop = saved
	return last
}

// bindItem registers a loop's item as a binding: unique among the
// runbook's bindings, like a step's (E031).
func (a *analysis) bindItem(l *loop) {
	name := l.item.Name
	if prev, dup := a.bindings[name]; dup {
		d := a.diags.Errorf(lang.EDuplicateBinding, l.item.NameRange, "binding @%s is defined twice", name)
		if prev.binding != nil {
			d.WithRelated(prev.binding.NameRange, "@%s is first defined here", name)
		}
		return
	}
	if prev, dup := a.items[name]; dup {
		d := a.diags.Errorf(lang.EDuplicateBinding, l.item.NameRange, "binding @%s is defined twice", name)
		if prev.item != nil {
			d.WithRelated(prev.item.NameRange, "@%s is first defined here", name)
		}
		return
	}
	a.items[name] = l
}

// readLoopOptions reads :as @item and :parallel N (E041, E023 for a
// repeat).
func (a *analysis) readLoopOptions(l *loop) {
	seen := map[string]*lang.Arg{}
	for _, o := range l.form.Options {
		if prev, dup := seen[o.Name]; dup {
			a.diags.Errorf(lang.EDuplicateArg, o.NameRange, "option :%s of (for-each ...) is given twice", o.Name).
				WithRelated(prev.NameRange, "first given here")
			continue
		}
		seen[o.Name] = o
		switch o.Name {
		case loopOptionAs:
			ref, ok := o.Value.(*lang.Ref)
			switch {
			case !ok || len(ref.Path) > 0:
				a.diags.Errorf(lang.EBadOption, o.Value.Range(), ":as takes a bare reference that names the element, as in :as @host")
			case ref.Name == failureBinding:
				a.diags.Errorf(lang.EBadOption, ref.NameRange, "@%s is reserved: inside (on-failure ...) it names the failure the hooks run after; choose another name", failureBinding)
			default:
				l.item = ref
			}
		case loopOptionParallel:
			n, ok := o.Value.(*lang.Int)
			if !ok || n.Value < 1 {
				a.diags.Errorf(lang.EBadOption, o.Value.Range(), ":parallel takes a whole number of at least 1, how many elements run at once; without it, all do")
				continue
			}
			l.parallel = int(min(n.Value, int64(^uint32(0)>>1)))
		default:
			valid := []string{loopOptionAs, loopOptionParallel}
			a.diags.Errorf(lang.EBadOption, o.NameRange, "(for-each ...) has no option :%s (valid: :as, :parallel)", o.Name).
				WithReplacements(o.NameRange, ":"+o.Name, prefixAll(":", lang.Suggest(o.Name, valid)), nil)
		}
	}
	if _, ok := seen[loopOptionAs]; !ok {
		a.diags.Errorf(lang.EBadOption, l.form.HeadRange, "(for-each ...) needs :as @name, the name its calls read each element by, as in (for-each @hosts.items :as @host ...)")
	}
}

// checkLoops checks each loop's list (E054) and types its element, outer
// loops first, since an inner list may read an outer element. A list
// read from a step makes a data edge from that step into every template
// inside the loop: they are expanded once it is known.
func (a *analysis) checkLoops() {
	for _, l := range a.loops {
		if l.form.List == nil {
			continue // reported by the parser
		}
		a.checkList(l)
		if len(l.written) > a.opts.maxFanout() {
			a.diags.Errorf(lang.EBadList, l.form.List.Range(), "the list of (for-each ...) holds %d elements, more than %d (--max-fanout)", len(l.written), a.opts.maxFanout())
		}
	}
	a.checkExpandedSize()
}

// checkExpandedSize reports (E054) lists written out that would expand to
// more than MaxSteps steps, before anything is expanded: nested lists
// multiply. A template counts once for each element of every list written
// out around it, up to the first list known only at run time.
func (a *analysis) checkExpandedSize() {
	limit := MaxSteps
	total := 0
	var widest *loop
	for _, s := range a.steps {
		n := 1
		var outer *loop
		for m := s.loop; m != nil && m.written != nil && n <= limit; m = m.parent {
			n *= max(len(m.written), 1)
			outer = m
		}
		if outer != nil && (widest == nil || n > len(widest.written)) {
			widest = outer
		}
		if total += n; total > limit {
			at := lang.Range{}
			if widest != nil {
				at = widest.form.List.Range()
			}
			a.diags.Errorf(lang.EBadList, at, "the lists written out in this runbook's for-each forms expand to more than %d steps; a runbook may have at most %d", limit, limit)
			return
		}
	}
}

// checkList reads a loop's list.
func (a *analysis) checkList(l *loop) {
	switch v := l.form.List.(type) {
	case *lang.List:
		l.written = v.Items
		l.list = a.freezeValue(v)
		for _, item := range v.Items {
			lang.Walk(item, func(inner lang.Value) {
				switch inner := inner.(type) {
				case *lang.Ref:
					a.loopReads(l, inner)
				case *lang.Input:
					a.inputs.use(&a.diags, inner, nil, "a for-each's list")
				case *lang.Call, *lang.Cond:
					a.diags.Errorf(lang.EBadList, inner.Range(), "the elements of a for-each's list are values: a literal, a reference, an input or (str ...)")
				}
			})
		}
		l.elem = writtenSchema(v.Items)
	case *lang.Ref:
		schema, ok := a.loopReads(l, v)
		if !ok {
			return
		}
		l.list = a.freezeValue(v)
		if types := verbs.Types(schema); types != nil && !slices.Contains(types, "array") {
			a.diags.Errorf(lang.EBadList, v.Span, "the list of (for-each ...) must be a list, but @%s is %s", v.PathString(), strings.Join(types, " or "))
			return
		}
		l.elem = verbs.Items(schema, 0)
	case *lang.Input:
		l.list = a.freezeValue(v)
		a.inputs.use(&a.diags, v, map[string]any{"type": "array"}, "the list of a for-each")
	case *lang.Func:
		if v.Name != lang.FormFilter {
			a.diags.Errorf(lang.EBadList, v.Range(), "the list of (for-each ...) is a list written out, an $input, a reference to a list or (filter ...); found (%s ...), which is no list", v.Name)
			return
		}
		// The filter reads its references where the loop stands, as a
		// reference list would (loopReads); its element is its own.
		a.loopList = l
		op := a.funcOperand(&step{loop: l.parent, id: -1}, v, false)
		a.loopList = nil
		l.list = a.freezeValue(v)
		l.elem = verbs.Items(op.schema, 0)
		// The runtime expands a loop when the one step its list reads
		// completes (ListProducer), so a filtered list reads one.
		steps := map[string]bool{}
		ValueRefs(l.list, func(ref string) {
			if key, _, ok := SplitRef(ref, func(k string) bool { return a.byKey[k] != nil }); ok {
				steps[key] = true
			}
		})
		if len(steps) > 1 {
			a.diags.Errorf(lang.EBadList, v.Range(), "the (filter ...) of a for-each reads %d steps (%s); it may read one, whose completion makes the list known",
				len(steps), strings.Join(slices.Sorted(maps.Keys(steps)), ", "))
		}
	case *lang.Bad:
	default:
		a.diags.Errorf(lang.EBadList, v.Range(), "the list of (for-each ...) is a list written out, an $input or a reference to a list; found %s", describeValue(v))
	}
}

// loopReads resolves a reference of a loop's list, which the loop reads
// where it stands: in its parent's body, or at the top level. It returns
// the schema the reference reaches.
func (a *analysis) loopReads(l *loop, ref *lang.Ref) (map[string]any, bool) {
	if m, ok := a.items[ref.Name]; ok {
		if !m.inside(l.parent) {
			a.itemOutside(ref, m)
			return nil, false
		}
		a.used[ref.Name] = true
		return a.walkSchema(m.elem, func() (string, string) { return "element of the list", "the list" }, ref)
	}
	if ref.Name == failureBinding {
		a.diags.Errorf(lang.EOnFailure, ref.NameRange, "@failure is bound only inside (on-failure ...): it describes the failure the hooks run after")
		return nil, false
	}
	target := a.resolve(nil, ref)
	if target == nil {
		return nil, false
	}
	if target.hook {
		a.diags.Errorf(lang.EOnFailure, ref.NameRange, "@%s is a hook of (on-failure ...), which runs only after the runbook has ended; no step can use its result", ref.Name)
		return nil, false
	}
	if target.loop != nil && l.inside(target.loop) {
		a.diags.Errorf(lang.ECycle, ref.NameRange, "dependency cycle: the list of (for-each ... :as @%s) reads @%s, a step of its own body", l.key, ref.Name)
		return nil, false
	}
	for _, s := range a.steps {
		if s.loop != nil && l.encloses(s) {
			a.edges.addRef(target, s, EdgeData, ref.Span)
		}
	}
	return a.refSchemaFrom(target, ref, l.parent)
}

// itemOutside reports a loop's item used outside its body (E055).
func (a *analysis) itemOutside(ref *lang.Ref, m *loop) {
	d := a.diags.Errorf(lang.EItemOutside, ref.NameRange, "@%s is the element of a for-each, bound only inside its body", ref.Name)
	if m.item != nil { // nil for a loop of the runbook being extended
		d.WithRelated(m.item.NameRange, "@%s is bound here", ref.Name)
	}
}

// itemRef resolves a reference to a loop's item from step s (nil for a
// hook): the element, typed by the list's items, with no edge.
func (a *analysis) itemRef(s *step, ref *lang.Ref, m *loop) (map[string]any, bool) {
	if s == nil || !m.encloses(s) {
		a.itemOutside(ref, m)
		return nil, false
	}
	a.used[ref.Name] = true
	return a.walkSchema(m.elem, func() (string, string) { return "element of the list", "the list" }, ref)
}

// refSchemaFrom is refSchema for a reference read inside loop scope (nil:
// outside every loop). A template of a loop that does not enclose the
// reader is the list of its instances' results: its output schema is
// wrapped in an array for each loop around it that is not around the
// reader, and a list written out says how long it is (E032 past it).
func (a *analysis) refSchemaFrom(target *step, ref *lang.Ref, scope *loop) (map[string]any, bool) {
	var around []*loop
	for m := target.loop; m != nil && !m.inside(scope); m = m.parent {
		around = append(around, m)
	}
	if len(around) == 0 {
		return a.refSchema(target, ref)
	}
	var cur map[string]any
	if schema := target.outputSchema(); schema != nil {
		cur = schema.Raw()
	}
	for _, m := range around {
		list := map[string]any{"type": "array"}
		if cur != nil {
			list["items"] = cur
		}
		if m.written != nil {
			list[elementsKey] = len(m.written)
		}
		cur = list
	}
	return a.walkSchema(cur, func() (string, string) { return "list of the results of " + quote(target.key), quote(target.key) }, ref)
}

// levels is how many loops around target are not around scope: 0 when
// the reader is inside every loop of target, so it reads the same
// element's result.
func levels(target *step, scope *loop) int {
	n := 0
	for m := target.loop; m != nil && !m.inside(scope); m = m.parent {
		n++
	}
	return n
}

// writtenSchema describes the elements of a list written out, for the
// paths its body reads (E032): nil when one is not known until run time;
// else, for maps, the keys every element has, each described the same
// way, and no other; for lists, what their items are. It says nothing of
// types: each element is checked against the parameters it is passed to
// once its value is put in (checkWrittenLists), so a mistake is reported
// once, at the element.
func writtenSchema(items []lang.Value) map[string]any {
	values := make([]any, 0, len(items))
	for _, item := range items {
		if !isLiteral(item) {
			return nil
		}
		values = append(values, jsonValue(item))
	}
	return valuesSchema(values)
}

func valuesSchema(values []any) map[string]any {
	if len(values) == 0 {
		return nil
	}
	objects, arrays := true, true
	for _, v := range values {
		_, isMap := v.(map[string]any)
		_, isList := v.([]any)
		objects, arrays = objects && isMap, arrays && isList
	}
	schema := map[string]any{}
	switch {
	case objects:
		props := map[string]any{}
		first := values[0].(map[string]any)
		for k := range first {
			var fields []any
			for _, v := range values {
				f, ok := v.(map[string]any)[k]
				if !ok {
					fields = nil
					break
				}
				fields = append(fields, f)
			}
			if fields != nil {
				props[k] = nonNil(valuesSchema(fields))
			}
		}
		schema["properties"] = props
		schema["additionalProperties"] = false
	case arrays:
		var all []any
		for _, v := range values {
			all = append(all, v.([]any)...)
		}
		if items := valuesSchema(all); items != nil {
			schema["items"] = items
		}
	}
	return schema
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// checkWrittenLists validates, for each loop whose list is written out,
// every argument of its templates that reads the element, once for each
// element, now that the values are known (E022 at the element); and it
// checks the paths they read in each element (E032).
func (a *analysis) checkWrittenLists() {
	for _, l := range a.loops {
		if l.written == nil || l.key == "" {
			continue
		}
		elems, _ := l.list.([]any)
		for _, s := range a.steps {
			if s.loop != l || s.def == nil || s.def.InputSchema == nil {
				continue
			}
			for j, arg := range s.args {
				if s.argJSON == nil || !readsItem(s.argJSON[j], l.key) {
					continue
				}
				for i, elem := range elems {
					x := &expander{item: l.key, elem: elem, isKey: func(string) bool { return false }}
					v, err := x.value(s.argJSON[j])
					at := l.written[i].Range()
					if err != nil {
						a.diags.Errorf(lang.EUnknownField, at, "element %d of the list: %v, which :%s of %s reads", i, err, arg.Name, s.def.FullName()).
							WithRelated(arg.Value.Range(), "read here")
						continue
					}
					if hasMarker(v) {
						continue // known when the step runs
					}
					if err := s.def.InputSchema.ValidateProperty(arg.Name, v); err != nil {
						a.diags.Errorf(lang.EArgSchema, at, "element %d of the list: argument :%s of %s does not match its schema: %v", i, arg.Name, s.def.FullName(), err).
							WithRelated(arg.Value.Range(), "the element is passed here")
					}
				}
			}
		}
	}
}

// readsItem reports whether a plan value holds an $item of loop key.
func readsItem(v any, key string) bool {
	found := false
	_, _ = mapMarkers(v, func(k, value string) (any, bool, error) {
		if name, _ := splitName(value); k == ItemKey && name == key {
			found = true
		}
		return nil, false, nil
	})
	return found
}

// hasMarker reports whether a plan value holds any marker.
func hasMarker(v any) bool {
	found := false
	_, _ = mapMarkers(v, func(k, value string) (any, bool, error) {
		found = true
		return nil, false, nil
	})
	return found
}

// freezeLoops is the plan's loops: every for-each, its list frozen.
// Those written out are expanded by plan (expandLiterals), unless their
// :parallel bounds them.
func (a *analysis) freezeLoops() []*Loop {
	var out []*Loop
	for _, l := range a.loops {
		fl := &Loop{Key: l.key, Item: l.key, List: l.list, Parallel: l.parallel}
		if l.parent != nil {
			fl.Within = l.parent.key
		}
		out = append(out, fl)
	}
	return out
}
