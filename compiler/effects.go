package compiler

import (
	"net/url"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
)

// Effect is one step that can change the world outside the runbook: the
// plan's answer to a reviewer's question, what can this do, and what
// stands in front of each thing it does (docs/design/language.md v1.1).
//
// Effects are derived from the plan's steps, edges and verbs table, so
// they are left out of the plan hash, like positions: a plan's identity
// does not change with them, and plans compiled before they existed keep
// theirs. CheckPlan derives them again and refuses a plan whose list says
// otherwise, since a reviewer reads it to decide.
type Effect struct {
	Step        string             `json:"step"`
	Verb        string             `json:"verb"`
	SideEffects rbtype.SideEffects `json:"side_effects"`
	Risk        rbtype.Risk        `json:"risk"`
	// Gate is the gate in front of the step: its own, or else the nearest
	// upstream gate it cannot run without passing (see Effects); none when
	// nothing stands in front of it.
	Gate rbtype.Gate `json:"gate"`
	// GatedBy is the step whose gate that is: the step itself or one
	// upstream; empty when ungated.
	GatedBy string `json:"gated_by,omitempty"`
	// Target is what the handler acts on, as its static params name it:
	// host and path of an http.* handler's url, the table of pg.crud.
	// Empty when the handler names nothing.
	Target string `json:"target,omitempty"`
	// Hook marks a failure hook (docs/design/language.md v1.2): it runs only once the
	// runbook has ended failed, partial or cancelled, and the only gate in
	// front of it is its own.
	Hook bool `json:"hook,omitempty"`
	// PerElement marks a step that happens once for each element of a
	// for-each's list (docs/design/language.md v1.3): a template, done as many times
	// as its list has elements, or one element's instance ("upload[2]").
	PerElement bool `json:"per_element,omitempty"`
	// GateWhen is the condition of the step's own gate when it has one
	// (:gate-when, docs/design/language.md v1.4), as a runbook writes it:
	// the step waits for a person only when it holds, so that gate is
	// not counted in Gate and GatedBy, which name only gates that always
	// stand in front.
	GateWhen string `json:"gate_when,omitempty"`
	// Approvers is the group whose tokens may decide the step's own
	// gate; empty for any token that may approve.
	Approvers string `json:"approvers,omitempty"`
}

// Effects derives the effects of a plan: one entry per step whose side
// effects are not none, in plan order.
//
// The gate in front of a step is its own, or else one that every run of
// the step must pass first. A step runs only once every predecessor has
// completed, so a gate upstream on every path to the step is in front of
// it (docs/design/language.md v1.1), and so, at a join, is a gate on any branch that
// joins: the join waits for that branch too. The one exception is an
// accepted failure: a step that only runs :after a predecessor whose
// on_failure is continue runs when that predecessor fails, and a rejected
// gate fails its step, so that predecessor's own gate is not in front of
// it (the gates in front of the predecessor still are: it cannot fail
// before they open). A skipped step is the other exception (docs/design/language.md
// v1.2): a step that may be skipped, because it has a condition or takes
// data from one that may be, ends without passing its own gate, and a step
// that only runs :after it runs then; so, again, only the gates that every
// way of ending it passes are in front of such a step (ended, below). Of
// several gates in front of a step, the one named is the nearest: the last
// in plan order, which is topological. A hook has no edges; the only gate
// in front of it is its own.
func Effects(p *Plan) []Effect {
	// Each edge's ends are looked up once, for both passes below (the
	// skippable steps, then the gates): at 100k steps, two maps of every
	// key and two lookups an edge in each made Effects a fifth of the CPU
	// of making the plan (BENCHMARKS.md, "Compile under 2 s").
	byTo := p.edgesByTarget()
	skippable := skippableOf(byTo, p.Steps)
	// inherited[i] is the nearest gate in front of step i other than its
	// own, nearest[i] the nearest counting its own, and ended[i] the
	// nearest that every way of ending step i passes (completed, failed
	// under continue, skipped); -1 for none.
	inherited := make([]int, len(p.Steps))
	nearest := make([]int, len(p.Steps))
	ended := make([]int, len(p.Steps))
	for i := range p.Steps {
		inherited[i], ended[i] = -1, -1
	}
	// Edges come grouped by the step they lead to, in plan order, but
	// nothing below relies on it: each step's inherited gate is complete
	// before its own turn because every edge goes forward in the order.
	for i, s := range p.Steps {
		anyEnd := -1 // the gates passed once every predecessor has ended
		for _, e := range byTo.into(i) {
			from := e.from
			if from >= i {
				continue // not a plan CheckPlan accepts; nothing to add
			}
			// A predecessor that may end without completing (failed under
			// continue, or skipped) lets a step that only runs :after it
			// run with only the gates of its ending passed.
			mayEnd := skippable[from] || p.Steps[from].OnFailure == rbtype.OnFailureContinue
			flows := nearest[from]
			if e.kind == EdgeSequence && mayEnd {
				flows = ended[from]
			}
			inherited[i] = max(inherited[i], flows)
			if mayEnd {
				anyEnd = max(anyEnd, ended[from])
			} else {
				anyEnd = max(anyEnd, nearest[from])
			}
		}
		nearest[i] = inherited[i]
		if s.Gate != "" && s.Gate != rbtype.GateNone && s.GateWhen == nil {
			nearest[i] = i
		}
		ended[i] = inherited[i]
		if skippable[i] {
			ended[i] = anyEnd
		}
	}
	effects := []Effect{}
	for i, s := range p.Steps {
		if s.Execution.SideEffects == rbtype.SideEffectsNone {
			continue
		}
		e := Effect{Step: s.Key, Verb: s.Verb, SideEffects: s.Execution.SideEffects, Risk: rbtype.RiskLow, Gate: rbtype.GateNone, Target: Target(s)}
		if info := p.Verbs[s.Verb]; info != nil && info.Risk != "" {
			e.Risk = info.Risk
		}
		if g := nearest[i]; g >= 0 {
			e.Gate, e.GatedBy = p.Steps[g].Gate, p.Steps[g].Key
		}
		if s.GateWhen != nil {
			e.GateWhen = s.GateWhen.String()
		}
		e.Approvers = s.Approvers
		e.Hook = s.Kind == KindHook
		e.PerElement = s.Loop != "" || strings.Contains(s.Key, "[")
		effects = append(effects, e)
	}
	return effects
}

// Target names what a step's handler acts on, from its static params: host
// and path of an http.* handler's url, the table of pg.crud, else "". A
// step without side effects can have one too (a model call that changes
// nothing still sends its arguments there), which rbc effects shows apart.
func Target(s *Step) string {
	params := s.Execution.Params
	switch {
	case strings.HasPrefix(s.Execution.Handler, "http."):
		raw, _ := params["url"].(string)
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			return u.Host + u.Path
		}
		return raw // not a URL this can take apart (${env:...}, say): as written
	case s.Execution.Handler == "pg.crud":
		table, _ := params["table"].(string)
		return table
	}
	return ""
}

// skippable reports, for each step of the plan, whether a run may skip it
// for a condition (docs/design/language.md v1.2): it has one, or takes data from a
// step that may be skipped. (Steps skipped after a failure are another
// matter, decided by failure modes.)
func (p *Plan) skippable() []bool { return skippableOf(p.edgesByTarget(), p.Steps) }

// skippableOf is skippable over the plan's edges grouped by target.
func skippableOf(byTo edgesByTarget, steps []*Step) []bool {
	out := make([]bool, len(steps))
	for i, s := range steps {
		out[i] = s.When != nil
	}
	// Edges go forward in plan order, so one pass in that order settles
	// every step; each step is settled before its successors look.
	for i := range steps {
		for _, e := range byTo.into(i) {
			if e.kind == EdgeData && e.from < i {
				out[i] = out[i] || out[e.from]
			}
		}
	}
	return out
}

// indexedEdge is an edge whose source is known by its position in the
// plan's steps.
type indexedEdge struct {
	from int
	kind string
}

// edgesByTarget holds a plan's edges between its steps grouped by the step
// they lead to, each group in the plan's order of edges: into(i) are the
// edges into step i. Edges naming a step the plan does not have are left
// out.
type edgesByTarget struct {
	edges []indexedEdge
	start []int // edges into step i are edges[start[i]:start[i+1]]
}

func (b edgesByTarget) into(i int) []indexedEdge { return b.edges[b.start[i]:b.start[i+1]] }

// edgesByTarget looks up each edge's ends once and groups the edges by
// target in two passes over flat slices (count, then place), not a slice
// per step.
func (p *Plan) edgesByTarget() edgesByTarget {
	index := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		index[s.Key] = i
	}
	type resolved struct{ from, to int }
	ends := make([]resolved, len(p.Edges))
	start := make([]int, len(p.Steps)+1)
	for k, e := range p.Edges {
		from, okF := index[e.From]
		to, okT := index[e.To]
		if !okF || !okT {
			ends[k] = resolved{-1, -1}
			continue
		}
		ends[k] = resolved{from, to}
		start[to+1]++
	}
	for i := range p.Steps {
		start[i+1] += start[i]
	}
	edges := make([]indexedEdge, start[len(p.Steps)])
	next := slices.Clone(start[:len(p.Steps)])
	for k, e := range p.Edges {
		if ends[k].to < 0 {
			continue
		}
		edges[next[ends[k].to]] = indexedEdge{from: ends[k].from, kind: e.Kind}
		next[ends[k].to]++
	}
	return edgesByTarget{edges: edges, start: start}
}
