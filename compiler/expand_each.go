package compiler

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/runbookdev/runbook/lang"
)

// Expanding many loops at once. A nested for-each over a list known only
// at run time makes, when its outer loop expands, one inner loop an
// element, and each of those has its list at once (docs/reliability.md,
// "Under attack", issue 45's row 5). Expanded one after another, each
// inner loop's expansion copied, re-encoded and hashed the whole plan
// grown by the ones before it: time in the square of the lists. Expanded
// together, the plan is walked, copied and sealed once, so the work is in
// proportion to the plan that results.

// LoopSize names a top-level loop and how many elements its list holds.
type LoopSize struct {
	Key string
	N   int
}

// ExpandEachWithin expands each loop of loops as ExpandWithin would, one
// after another in the order given, and returns the plan they make,
// walked, copied and sealed once. errs[i] says why loops[i] was not
// expanded (an error matching ErrPlanTooLarge when its instances would
// take the plan past maxBytes); the others are expanded all the same, as
// they would be one after another. grown is nil when none was.
//
// The plan's bytes are bounded as ExpandWithin bounds them: before a
// loop's instances are made, from what the plan holds (its steps as
// sealed, and the instances made before it, each encoded as the seal
// will encode it) and an estimate of what the loop adds. A plan that is
// not sealed (decoded from storage) has its steps measured first, where
// ExpandWithin would count them as nothing.
func (p *Plan) ExpandEachWithin(loops []LoopSize, maxBytes int) (grown *Plan, errs []error) {
	errs = make([]error, len(loops))
	want := make(map[string]int, len(loops)) // loop key → its place in loops
	for i, ls := range loops {
		l := p.loop(ls.Key)
		_, twice := want[ls.Key]
		switch {
		case l == nil:
			errs[i] = fmt.Errorf("the plan has no loop %q", ls.Key)
		case l.Within != "":
			errs[i] = fmt.Errorf("loop %q is within loop %q: expand that one, which makes its instances", ls.Key, l.Within)
		case ls.N < 0:
			errs[i] = fmt.Errorf("loop %q: %d elements", ls.Key, ls.N)
		case twice:
			errs[i] = fmt.Errorf("loop %q is expanded once", ls.Key)
		default:
			want[ls.Key] = i
		}
	}
	parts := p.partsOfEach(want)
	keys := make(map[string]bool, len(p.Steps))
	for _, s := range p.Steps {
		keys[s.Key] = true
	}
	isKey := func(k string) bool { return keys[k] }

	est := 0
	if maxBytes > 0 {
		est = p.encodedBytes()
		if est == 0 && len(p.Steps) > 0 {
			// A plan decoded from storage is not sealed: measure its
			// steps, once, so that the bound is on the whole plan, not
			// only on what the loops add.
			for _, b := range p.encodeSteps().steps {
				est += len(b) + 1
			}
		}
	}
	var steps []*Step
	var edges []Edge
	var made []*Loop
	expanded := false
	for i, ls := range loops {
		if errs[i] != nil {
			continue
		}
		l, part := p.loop(ls.Key), parts[ls.Key]
		elems, err := listElements(l.List, ls.N)
		if err != nil {
			errs[i] = fmt.Errorf("loop %q: %w", ls.Key, err)
			continue
		}
		if maxBytes > 0 {
			// est is what ExpandWithin would start from after the loops
			// before this one: the plan's steps as sealed. admit walks
			// only the loop's own templates.
			size := &planBytes{est: est, limit: maxBytes}
			if err := size.admit(&Plan{Steps: part.steps}, l, elems, part.copied, part.nested); err != nil {
				errs[i] = err
				continue
			}
		}
		inst, nested, into, err := p.instances(l, elems, part, isKey)
		if err != nil {
			errs[i] = err
			continue
		}
		for _, each := range inst {
			steps = append(steps, each...)
		}
		made, edges, expanded = append(made, nested...), append(edges, into...), true
		if maxBytes > 0 {
			est += encodedSize(inst, part)
		}
	}
	if !expanded {
		return nil, errs
	}
	out := &Plan{SchemaVersion: p.SchemaVersion, Sources: p.Sources, Inputs: p.Inputs, Verbs: p.Verbs}
	out.Steps = append(slices.Clip(p.Steps), steps...)
	out.Edges = append(slices.Clip(p.Edges), edges...)
	out.Loops = append(slices.Clip(p.Loops), made...)
	if p.Effects != nil {
		out.Effects = Effects(out)
	}
	out.seal()
	return out, errs
}

// loopParts is what expanding one loop copies: its step templates, at
// every depth, in plan order (by key in copied), the loops within it, and
// the edges into its templates.
type loopParts struct {
	copied map[string]bool
	steps  []*Step
	nested []*Loop
	into   []Edge
}

// partsOf is what expanding loop l copies.
func (p *Plan) partsOf(l *Loop) *loopParts {
	return p.partsOfEach(map[string]int{l.Key: 0})[l.Key]
}

// partsOfEach is, in one walk of the plan, what expanding each top-level
// loop of want copies.
func (p *Plan) partsOfEach(want map[string]int) map[string]*loopParts {
	out := make(map[string]*loopParts, len(want))
	for k := range want {
		out[k] = &loopParts{copied: map[string]bool{}}
	}
	// in is the loop of want whose chain holds at (at and the loops it
	// stands within), as chainHas walks it; nil for none.
	in := func(at string) *loopParts {
		for range lang.MaxForEachDepth + 1 {
			if at == "" {
				return nil
			}
			if part, ok := out[at]; ok {
				return part
			}
			l := p.loop(at)
			if l == nil {
				return nil
			}
			at = l.Within
		}
		return nil
	}
	if len(out) == 0 {
		return out
	}
	copiedBy := map[string]*loopParts{}
	for _, s := range p.Steps {
		if part := in(s.Loop); part != nil {
			part.copied[s.Key] = true
			part.steps = append(part.steps, s)
			copiedBy[s.Key] = part
		}
	}
	for _, m := range p.Loops {
		if part := in(m.Within); part != nil {
			part.nested = append(part.nested, m)
		}
	}
	for _, e := range p.Edges {
		if part := copiedBy[e.To]; part != nil {
			part.into = append(part.into, e)
		}
	}
	return out
}

// instances makes loop l's instances for elems (see Expand): by element,
// its steps in plan order, then the loops within it and the edges into
// its templates, copied for each element.
func (p *Plan) instances(l *Loop, elems []any, part *loopParts, isKey func(string) bool) (steps [][]*Step, loops []*Loop, edges []Edge, err error) {
	steps = make([][]*Step, len(elems))
	for i, elem := range elems {
		x := &expander{item: l.Item, elem: elem, suffix: "[" + strconv.Itoa(i) + "]", copied: part.copied, isKey: isKey}
		for _, s := range part.steps {
			c := *s
			c.Key = s.Key + x.suffix
			c.Loop = ""
			if s.Loop != l.Key {
				c.Loop = s.Loop + x.suffix
			}
			if c.Args, err = x.args(s.Args); err != nil {
				return nil, nil, nil, fmt.Errorf("step %q, element %d: %w", s.Key, i, err)
			}
			if c.When, err = x.cond(s.When); err != nil {
				return nil, nil, nil, fmt.Errorf("step %q, element %d: %w", s.Key, i, err)
			}
			if c.GateWhen, err = x.cond(s.GateWhen); err != nil {
				return nil, nil, nil, fmt.Errorf("step %q, element %d: %w", s.Key, i, err)
			}
			steps[i] = append(steps[i], &c)
		}
		for _, m := range part.nested {
			c := *m
			c.Key = m.Key + x.suffix
			c.Within = ""
			if m.Within != l.Key {
				c.Within = m.Within + x.suffix
			}
			if c.List, err = x.value(m.List); err != nil {
				return nil, nil, nil, fmt.Errorf("loop %q, element %d: %w", m.Key, i, err)
			}
			loops = append(loops, &c)
		}
		for _, e := range part.into {
			from := e.From
			if part.copied[from] {
				from += x.suffix
			}
			edges = append(edges, Edge{From: from, To: e.To + x.suffix, Kind: e.Kind})
		}
	}
	return steps, loops, edges, nil
}

// encodedSize is what the seal's encoding of a loop's instances takes,
// each step's execution block encoded once for all its instances.
func encodedSize(instances [][]*Step, part *loopParts) int {
	blocks := make(map[*Step][]byte, len(part.steps))
	for _, s := range part.steps {
		blocks[s] = mustJSON(s.Execution)
	}
	n, cut := 0, 0
	var scratch []byte
	for _, each := range instances {
		for j, c := range each {
			scratch = appendStep(scratch[:0], c, blocks[part.steps[j]], &cut)
			n += len(scratch) + 1
		}
	}
	return n
}
