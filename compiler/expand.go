package compiler

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
)

// Expand returns the plan with one instance of loop key for each of the
// n elements of its list: what the runtime adds once the list is known
// (see Loop). The plan itself is not changed, and the new one is sealed
// (hashed) like any plan the compiler makes.
//
// For each element i, in list order, and each step template T inside the
// loop (its Loop is key, or a loop within it), the instance is a copy of
// T keyed "T[i]": an ordinary step when T's loop is key, else a template
// of the instance "L[i]" of T's loop L, which is added too (its Within is
// cut the same way, and its list substituted like the arguments). In the
// copies' arguments, conditions and loop lists:
//   - {"$item": "host<path>"}, host being the loop's Item, becomes the
//     element i read at that path: for a list read from a step
//     {"$ref": "<list>[i]<path>"}, from an input {"$input":
//     "<list>[i]<path>"}, for a list written out its element i walked
//     by the path (an element that is itself a marker gets the path
//     appended to it);
//   - {"$ref": "T<path>"} of a template T inside the loop becomes
//     {"$ref": "T[i]<path>"}: inside one element, a step reads the same
//     element's result of another.
//
// Every edge into T is copied into each T[i], from X[i] when its source X
// is inside the loop too (same element), else from X itself. Edges out of
// T to steps outside the loop are left as they are: they wait for the
// template, which ends when all its instances have. The new steps, edges
// and loops come after the plan's own, so rows already stored keep their
// positions; the order is still topological.
//
// The runtime resolves a marker of an instance as it resolves any other;
// it never reads an element's content as a marker. (It does need $input
// with a path, and $ref keys holding "[i]", which SplitRef resolves.)
func (p *Plan) Expand(key string, n int) (*Plan, error) {
	return p.ExpandWithin(key, n, 0)
}

// ExpandWithin is Expand bounded: an expansion whose plan would pass
// maxBytes of JSON, as estimated before its instances are made
// (plan_size.go), is refused with an error that matches ErrPlanTooLarge.
// maxBytes <= 0 bounds nothing.
func (p *Plan) ExpandWithin(key string, n, maxBytes int) (*Plan, error) {
	l := p.loop(key)
	switch {
	case l == nil:
		return nil, fmt.Errorf("the plan has no loop %q", key)
	case l.Within != "":
		return nil, fmt.Errorf("loop %q is within loop %q: expand that one, which makes its instances", key, l.Within)
	case n < 0:
		return nil, fmt.Errorf("loop %q: %d elements", key, n)
	}
	elems, err := listElements(l.List, n)
	if err != nil {
		return nil, fmt.Errorf("loop %q: %w", key, err)
	}
	var size *planBytes
	if maxBytes > 0 {
		size = &planBytes{est: p.encodedBytes(), limit: maxBytes}
	}
	out, err := p.expand(l, elems, false, size)
	if err != nil {
		return nil, err
	}
	out.Effects = nil
	if p.Effects != nil {
		out.Effects = Effects(out)
	}
	out.seal()
	return out, nil
}

// listElements is the elements of a loop's list, as plan values: for a
// marker, the marker with "[i]" appended; for a list written out, its
// items (of which there must be n).
func listElements(list any, n int) ([]any, error) {
	if items, ok := list.([]any); ok {
		if len(items) != n {
			return nil, fmt.Errorf("its list holds %d elements, not %d", len(items), n)
		}
		return items, nil
	}
	m, _ := list.(map[string]any)
	var key, value string
	for k, v := range m {
		key, value = k, fmt.Sprint(v)
	}
	if _, filter := m[FilterKey]; filter && len(m) == 1 {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{IndexKey: map[string]any{"list": list, "path": "[" + strconv.Itoa(i) + "]"}}
		}
		return out, nil
	}
	if len(m) != 1 || (key != RefKey && key != InputKey) {
		return nil, fmt.Errorf("its list %s is not a reference, an input, a list or (filter ...)", appendJSON(nil, list))
	}
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{key: value + "[" + strconv.Itoa(i) + "]"}
	}
	return out, nil
}

// expandLiterals expands, in the compiler, every loop of the plan whose
// list is written out and that is not within a loop known only at run
// time, outermost first, until none is left: a list written out is
// expanded when it is compiled (docs/design/language.md v1.3). The plan must hold at
// most limit steps afterwards.
//
// A loop whose :parallel is smaller than its list is the exception: it is
// kept as a loop of templates, which the runtime expands in the runbook's
// first round, so that its scheduler holds the elements to :parallel at
// once (docs/runtime.md, "For-each"); expanded here, its instances would
// be ordinary steps, all free to start together.
func (p *Plan) expandLiterals(limit, maxBytes int) (*Plan, error) {
	kept := map[string]bool{}
	// The plan's size is measured once there is a list to expand: most
	// plans have none, and encoding a large one costs as much as the rest
	// of the compile.
	var size *planBytes
	for {
		var next *Loop
		for _, l := range p.Loops {
			if _, written := l.List.([]any); written && l.Within == "" && !kept[l.Key] {
				next = l
				break
			}
		}
		if next == nil {
			return p, nil
		}
		items := next.List.([]any)
		inside := 0
		for _, s := range p.Steps {
			if p.inLoop(s, next.Key) {
				inside++
			}
		}
		if grown := len(p.Steps) + (len(items)-1)*inside; grown > limit {
			return nil, &tooManySteps{loop: next.Key, steps: grown, limit: limit}
		}
		if next.Parallel > 0 && next.Parallel < len(items) {
			kept[next.Key] = true
			continue
		}
		if size == nil {
			raw, err := json.Marshal(p)
			if err != nil {
				return nil, err
			}
			size = &planBytes{est: len(raw), limit: maxBytes}
		}
		var err error
		if p, err = p.expand(next, items, true, size); err != nil {
			return nil, err
		}
	}
}

// tooManySteps is the error of a runbook whose lists written out expand
// to more steps than a plan may hold.
type tooManySteps struct {
	loop         string
	steps, limit int
}

func (e *tooManySteps) Error() string {
	return fmt.Sprintf("expanding the list of (for-each ... :as @%s) makes %d steps; a runbook may have at most %d", e.loop, e.steps, e.limit)
}

// inLoop reports whether step s is inside loop key: a template of it or
// of a loop within it.
func (p *Plan) inLoop(s *Step, key string) bool { return p.chainHas(s.Loop, key) }

// loopWithin reports whether loop m stands within loop key, at any depth.
func (p *Plan) loopWithin(m *Loop, key string) bool { return p.chainHas(m.Within, key) }

// chainHas reports whether key is loop at or one it stands within. The
// walk is bounded, so a plan from outside whose loops stand within each
// other in a circle (which the plan check refuses) cannot hang it.
func (p *Plan) chainHas(at, key string) bool {
	for range lang.MaxForEachDepth + 1 {
		if at == "" {
			return false
		}
		if at == key {
			return true
		}
		l := p.loop(at)
		if l == nil {
			return false
		}
		at = l.Within
	}
	return false
}

// expand makes the instances of loop l for elems (see Expand). static is
// the compiler's expansion of a list written out: the instances then
// replace the templates in place, the loop and those within it go, a step
// outside that read a template reads its instances instead (the whole
// list as a list of references, "T[j]..." as it is), and edges out of a
// template leave each of its instances. size, when set, is the plan's
// estimated bytes, which the expansion must keep within their bound
// (plan_size.go) before it makes anything.
func (p *Plan) expand(l *Loop, elems []any, static bool, size *planBytes) (*Plan, error) {
	keys := make(map[string]bool, len(p.Steps))
	for _, s := range p.Steps {
		keys[s.Key] = true
	}
	isKey := func(k string) bool { return keys[k] }
	out := &Plan{SchemaVersion: p.SchemaVersion, Sources: p.Sources, Inputs: p.Inputs, Verbs: p.Verbs}

	part := p.partsOf(l) // the templates, loops within l and edges into them, copied for each element
	copied := part.copied
	if err := size.admit(&Plan{Steps: part.steps}, l, elems, copied, part.nested); err != nil { // admit walks only the templates
		return nil, err
	}
	instances, loops, edges, err := p.instances(l, elems, part, isKey) // by element, in plan order
	if err != nil {
		return nil, err
	}

	if !static {
		out.Steps = slices.Clone(p.Steps)
		for _, inst := range instances {
			out.Steps = append(out.Steps, inst...)
		}
		out.Edges = append(slices.Clone(p.Edges), edges...)
		out.Loops = append(slices.Clone(p.Loops), loops...)
		return out, nil
	}

	// In place: each template's instances where it stood.
	byKey := map[string][]*Step{}
	for _, inst := range instances {
		for _, c := range inst {
			base := c.Key[:strings.LastIndexByte(c.Key, '[')]
			byKey[base] = append(byKey[base], c)
		}
	}
	r := &reader{copied: copied, isKey: isKey, n: len(elems)}
	for _, s := range p.Steps {
		if copied[s.Key] {
			out.Steps = append(out.Steps, byKey[s.Key]...)
			continue
		}
		c := *s
		var err error
		if c.Args, err = r.args(s.Args); err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Key, err)
		}
		if c.When, err = r.cond(s.When); err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Key, err)
		}
		if c.GateWhen, err = r.cond(s.GateWhen); err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Key, err)
		}
		out.Steps = append(out.Steps, &c)
	}
	for _, m := range p.Loops {
		if m.Key == l.Key || p.loopWithin(m, l.Key) {
			continue
		}
		c := *m
		var err error
		if c.List, err = r.value(m.List); err != nil {
			return nil, fmt.Errorf("loop %q: %w", m.Key, err)
		}
		out.Loops = append(out.Loops, &c)
	}
	out.Loops = append(out.Loops, loops...)
	for _, e := range p.Edges {
		switch {
		case copied[e.To]:
			// copied with the instances
		case copied[e.From]:
			for i := range elems {
				edges = append(edges, Edge{From: e.From + "[" + strconv.Itoa(i) + "]", To: e.To, Kind: e.Kind})
			}
		default:
			edges = append(edges, e)
		}
	}
	out.Edges = sortEdges(out.Steps, edges)
	return out, nil
}

// sortEdges orders edges as the compiler does: by the position of their
// target, then of their source; duplicates are dropped, a data edge
// winning over a sequence edge between the same steps.
func sortEdges(steps []*Step, edges []Edge) []Edge {
	pos := make(map[string]int, len(steps))
	for i, s := range steps {
		pos[s.Key] = i
	}
	kinds := map[[2]string]string{}
	var out []Edge
	for _, e := range edges {
		k := [2]string{e.From, e.To}
		prev, seen := kinds[k]
		if !seen {
			out = append(out, e)
			kinds[k] = e.Kind
		} else if edgeStrength(e.Kind) > edgeStrength(prev) {
			kinds[k] = e.Kind
		}
	}
	for i := range out {
		out[i].Kind = kinds[[2]string{out[i].From, out[i].To}]
	}
	slices.SortStableFunc(out, func(a, b Edge) int {
		if pos[a.To] != pos[b.To] {
			return pos[a.To] - pos[b.To]
		}
		return pos[a.From] - pos[b.From]
	})
	return out
}

// expander rewrites the values of one instance of a loop (see Expand).
type expander struct {
	item   string
	elem   any
	suffix string
	copied map[string]bool
	isKey  func(string) bool
	// sizes are the estimated bytes of the element's values, by path
	// (plan_size.go).
	sizes map[string]int
}

func (x *expander) args(args map[string]any) (map[string]any, error) {
	if args == nil {
		return nil, nil
	}
	v, err := x.value(args)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func (x *expander) cond(c *Cond) (*Cond, error) {
	return mapCond(c, x.value)
}

func (x *expander) value(v any) (any, error) {
	return mapMarkers(v, func(key, value string) (any, bool, error) {
		switch key {
		case ItemKey:
			name, path := splitName(value)
			if name != x.item {
				return nil, false, nil
			}
			elem, err := elementAt(x.elem, path)
			return elem, true, err
		case RefKey:
			if k, path, ok := SplitRef(value, x.isKey); ok && x.copied[k] {
				return map[string]any{RefKey: k + x.suffix + path}, true, nil
			}
		case StatusKey:
			// Inside one element, a status test reads the same
			// element's instance, as a reference does.
			if x.copied[value] {
				return map[string]any{StatusKey: value + x.suffix}, true, nil
			}
		}
		return nil, false, nil
	})
}

// reader rewrites, in a static expansion, what steps outside the loop
// read of its templates: the whole template is the list of its
// instances, and "T[j]..." names instance j.
type reader struct {
	copied map[string]bool
	isKey  func(string) bool
	n      int
}

func (r *reader) args(args map[string]any) (map[string]any, error) {
	if args == nil {
		return nil, nil
	}
	v, err := r.value(args)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func (r *reader) cond(c *Cond) (*Cond, error) { return mapCond(c, r.value) }

func (r *reader) value(v any) (any, error) {
	return mapMarkers(v, func(key, value string) (any, bool, error) {
		if key != RefKey {
			return nil, false, nil
		}
		k, path, ok := SplitRef(value, r.isKey)
		if !ok || !r.copied[k] {
			return nil, false, nil
		}
		if path == "" {
			list := make([]any, r.n)
			for i := range list {
				list[i] = map[string]any{RefKey: k + "[" + strconv.Itoa(i) + "]"}
			}
			return list, true, nil
		}
		if !strings.HasPrefix(path, "[") {
			return nil, false, fmt.Errorf("%s reads %q of a list of results", value, path)
		}
		end := strings.IndexByte(path, ']')
		if j, err := strconv.Atoi(path[1:end]); err != nil || j >= r.n {
			return nil, false, fmt.Errorf("%s reads element %s of a list of %d", value, path[1:end], r.n)
		}
		return map[string]any{RefKey: k + path}, true, nil
	})
}

// mapMarkers copies a plan value, replacing each marker for which fn says
// so (fn gets the marker's key and string value).
func mapMarkers(v any, fn func(key, value string) (any, bool, error)) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for k, x := range v {
				if s, ok := x.(string); ok && strings.HasPrefix(k, "$") {
					if out, replaced, err := fn(k, s); err != nil || replaced {
						return out, err
					}
				}
			}
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			y, err := mapMarkers(x, fn)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := mapMarkers(x, fn)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	return v, nil
}

// mapCond copies a condition, its values rewritten by fn.
func mapCond(c *Cond, fn func(any) (any, error)) (*Cond, error) {
	if c == nil {
		return nil, nil
	}
	out := &Cond{Op: c.Op, Args: make([]any, len(c.Args))}
	for i, arg := range c.Args {
		var err error
		if sub, ok := arg.(*Cond); ok {
			out.Args[i], err = mapCond(sub, fn)
		} else {
			out.Args[i], err = fn(arg)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// splitName splits a reference as written without "@" into its name and
// its path: "host.ports[0]" is "host", ".ports[0]".
func splitName(ref string) (name, path string) {
	if i := strings.IndexAny(ref, ".["); i >= 0 {
		return ref[:i], ref[i:]
	}
	return ref, ""
}

// elementAt reads path in an element: a marker gets the path appended
// ({"$ref": "hosts.items[2]"} at ".name" is {"$ref":
// "hosts.items[2].name"}), a value written out is walked.
func elementAt(elem any, path string) (any, error) {
	for path != "" {
		if m, ok := elem.(map[string]any); ok && len(m) == 1 {
			for k, x := range m {
				s, isString := x.(string)
				switch {
				case isString && (k == RefKey || k == InputKey || k == ItemKey):
					return map[string]any{k: s + path}, nil
				case k == IndexKey:
					spec, _ := x.(map[string]any)
					at, _ := spec["path"].(string)
					return map[string]any{IndexKey: map[string]any{"list": spec["list"], "path": at + path}}, nil
				case k == StrKey:
					return nil, fmt.Errorf("the element is text, which has no %s", path)
				}
			}
		}
		var step string
		if path[0] == '.' {
			end := strings.IndexAny(path[1:], ".[")
			if end < 0 {
				end = len(path) - 1
			}
			step, path = path[1:end+1], path[end+1:]
			m, ok := elem.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("the element is %s, which has no field %q", jsonKind(elem), step)
			}
			if elem, ok = m[step]; !ok {
				return nil, fmt.Errorf("the element has no field %q", step)
			}
			continue
		}
		end := strings.IndexByte(path, ']')
		if end < 0 {
			return nil, fmt.Errorf("bad path %q", path)
		}
		j, err := strconv.Atoi(path[1:end])
		step, path = path[:end+1], path[end+1:]
		list, ok := elem.([]any)
		if err != nil || !ok || j < 0 || j >= len(list) {
			return nil, fmt.Errorf("the element has no %s", step)
		}
		elem = list[j]
	}
	return elem, nil
}

// jsonKind names what a plan value is, for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	case string:
		return "text"
	case nil:
		return "nil"
	}
	return "a " + string(appendJSON(nil, v))
}

// ListProducer is the key of the step whose completion makes a loop's
// list known: the step its $ref reads, or, for a (filter ...) of a list
// (docs/design/language.md v1.4), the one step the filter reads (the
// compiler allows one). ok is false for a list known from the start (an
// input, a list written out, a filter of those).
func ListProducer(list any, isKey func(string) bool) (key string, ok bool) {
	m, _ := list.(map[string]any)
	if len(m) != 1 {
		return "", false
	}
	if _, filter := m[FilterKey]; !filter {
		ref, isRef := m[RefKey].(string)
		if !isRef {
			return "", false
		}
		key, _, ok = SplitRef(ref, isKey)
		return key, ok
	}
	ValueRefs(list, func(ref string) {
		if k, _, found := SplitRef(ref, isKey); found && !ok {
			key, ok = k, true
		}
	})
	return key, ok
}
