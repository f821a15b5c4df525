package refmodel

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

var allVerbs = []Verb{Echo, Cont, Iso, Wait, Esc, Gate, Doubt, Paid, Keep}

// hookVerbs are the verbs a failure hook calls.
var hookVerbs = []Verb{Echo, Cont, Gate}

// statuses are the statuses a status test compares with.
var statuses = []string{"succeeded", "failed", "skipped", "cancelled", "escalated"}

// statusTest is a status test of ref.
func statusTest(r *rand.Rand, ref string) *When {
	return &When{Ref: ref, Status: statuses[r.IntN(len(statuses))], Not: r.IntN(2) == 0}
}

// Generate makes a runbook from r: two to five top-level items, steps of
// every verb reading and following earlier ones, conditions, and up to
// two for-each loops over a step's list, with :parallel and a body of one
// or two steps; a quarter of them draft_only.
func Generate(r *rand.Rand) *Runbook {
	rb := &Runbook{Draft: r.IntN(4) == 0}
	var plain, producers, templates []string
	byKey := map[string]*Step{}
	n := 2 + r.IntN(4)
	loops := 0
	for i := range n {
		if len(producers) > 0 && loops < 2 && r.IntN(3) == 0 {
			loops++
			l := &Loop{Item: fmt.Sprintf("x%d", i), Over: producers[r.IntN(len(producers))]}
			nested := byKey[l.Over].Nested // its elements are lists
			if r.IntN(2) == 0 {
				l.Parallel = 1 + r.IntN(2)
			}
			body := 1 + r.IntN(2)
			for j := range body {
				s := &Step{Key: fmt.Sprintf("t%d%c", i, 'a'+j), Verb: allVerbs[r.IntN(len(allVerbs))]}
				switch {
				case j > 0 && r.IntN(3) > 0:
					s.Reads = append(s.Reads, l.Body[j-1].Key)
				case r.IntN(4) > 0:
					s.Item = true
				}
				if len(plain) > 0 && r.IntN(4) == 0 {
					s.Reads = append(s.Reads, plain[r.IntN(len(plain))])
				}
				switch {
				case !nested && r.IntN(4) == 0:
					s.When = &When{Item: true, Below: r.IntN(3)}
				case j > 0 && !slices.Contains(s.Reads, l.Body[j-1].Key) && r.IntN(2) == 0:
					s.When = statusTest(r, l.Body[j-1].Key) // its own iteration's
				}
				l.Body = append(l.Body, s)
			}
			if nested {
				l.Inner = innerLoop(r, i, l, plain)
			}
			for m := l; m != nil; m = m.Inner {
				for _, s := range m.Body {
					templates = append(templates, s.Key)
				}
			}
			rb.Items = append(rb.Items, Item{Loop: l})
			continue
		}
		s := &Step{Key: fmt.Sprintf("s%d", i), Verb: allVerbs[r.IntN(len(allVerbs))]}
		if len(plain)+len(producers) > 0 && r.IntN(3) > 0 {
			all := append(append([]string{}, plain...), producers...)
			s.Reads = append(s.Reads, all[r.IntN(len(all))])
		}
		if len(templates) > 0 && r.IntN(2) == 0 {
			s.Reads = append(s.Reads, templates[r.IntN(len(templates))])
		}
		if len(plain) > 0 && r.IntN(5) == 0 {
			s.After = append(s.After, plain[r.IntN(len(plain))])
		}
		if len(plain) > 0 {
			switch ref := plain[r.IntN(len(plain))]; r.IntN(8) {
			case 0, 1:
				s.When = &When{Ref: ref, Below: 1 + r.IntN(3)}
			case 2:
				if !slices.Contains(s.Reads, ref) && !slices.Contains(s.After, ref) {
					s.When = statusTest(r, ref)
				}
			}
		}
		byKey[s.Key] = s
		if !s.Verb.Durable() && s.Verb != Gate && loops < 2 && r.IntN(2) == 0 {
			s.Produces, s.Nested = true, r.IntN(3) == 0
			producers = append(producers, s.Key)
		} else {
			plain = append(plain, s.Key)
		}
		rb.Items = append(rb.Items, Item{Step: s})
	}
	if r.IntN(3) == 0 {
		for i := range 1 + r.IntN(2) {
			h := &Step{Key: fmt.Sprintf("h%d", i), Verb: hookVerbs[r.IntN(len(hookVerbs))]}
			if len(plain) > 0 && r.IntN(2) == 0 {
				h.Reads = []string{plain[r.IntN(len(plain))]} // nil unless it completed
			}
			rb.Hooks = append(rb.Hooks, h)
		}
	}
	if slices.ContainsFunc(rb.Steps(), func(s *Step) bool { return s.Verb == Paid }) && r.IntN(2) == 0 {
		rb.Cap = float64(1 + r.IntN(3))
	}
	return rb
}

// Spend is what a call of s reports it spent: for Paid, half, all or
// half again of what it reserved; nothing for the others, which declare
// no cost.
func Spend(r *rand.Rand, s *Step) float64 {
	if s.Verb != Paid {
		return 0
	}
	return []float64{0.5, 1, 1.5}[r.IntN(3)]
}

// innerLoop is the for-each within loop l (of item i) over its element:
// :parallel or not, and one step, which reads the element, the outer
// body's first step of its iteration, or a step before the loop, and may
// test the element.
func innerLoop(r *rand.Rand, i int, l *Loop, plain []string) *Loop {
	m := &Loop{Item: fmt.Sprintf("y%d", i)}
	if r.IntN(2) == 0 {
		m.Parallel = 1 + r.IntN(2)
	}
	s := &Step{Key: fmt.Sprintf("u%d", i), Verb: allVerbs[r.IntN(len(allVerbs))], Item: r.IntN(2) == 0}
	if r.IntN(2) == 0 {
		s.Reads = append(s.Reads, l.Body[0].Key) // its own outer iteration's
	}
	if len(plain) > 0 && r.IntN(4) == 0 {
		s.Reads = append(s.Reads, plain[r.IntN(len(plain))])
	}
	if r.IntN(3) == 0 {
		s.When = &When{Item: true, Below: 1 + r.IntN(2)}
	}
	m.Body = []*Step{s}
	return m
}

// Value is a result the model hands a step: a list of zero to three
// numbers for a producer, a number otherwise, as {"v": ...}.
func Value(r *rand.Rand, s *Step) map[string]any {
	if s.Produces {
		list := make([]any, r.IntN(4))
		for i := range list {
			if !s.Nested {
				list[i] = float64(r.IntN(3))
				continue
			}
			inner := make([]any, r.IntN(3))
			for j := range inner {
				inner[j] = float64(r.IntN(3))
			}
			list[i] = inner
		}
		return map[string]any{"v": list}
	}
	return map[string]any{"v": float64(r.IntN(4))}
}

// Def is the generated step (or template) an interpreter step stands
// for.
func (s *S) Def() *Step { return s.def }
