package compiler

import (
	"net/url"
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
	index := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		index[s.Key] = i
	}
	skippable := p.skippable()
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
	byTo := make([][]Edge, len(p.Steps))
	for _, e := range p.Edges {
		if to, ok := index[e.To]; ok {
			byTo[to] = append(byTo[to], e)
		}
	}
	for i, s := range p.Steps {
		anyEnd := -1 // the gates passed once every predecessor has ended
		for _, e := range byTo[i] {
			from, ok := index[e.From]
			if !ok || from >= i {
				continue // not a plan CheckPlan accepts; nothing to add
			}
			// A predecessor that may end without completing (failed under
			// continue, or skipped) lets a step that only runs :after it
			// run with only the gates of its ending passed.
			mayEnd := skippable[from] || p.Steps[from].OnFailure == rbtype.OnFailureContinue
			flows := nearest[from]
			if e.Kind == EdgeSequence && mayEnd {
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
func (p *Plan) skippable() []bool {
	index := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		index[s.Key] = i
	}
	out := make([]bool, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = s.When != nil
	}
	// Edges go forward in plan order, so one pass in that order settles
	// every step; edges come grouped by their target, but any order of
	// edges works since each step is settled before its successors look.
	byTo := make([][]int, len(p.Steps))
	for _, e := range p.Edges {
		from, okF := index[e.From]
		to, okT := index[e.To]
		if okF && okT && e.Kind == EdgeData && from < to {
			byTo[to] = append(byTo[to], from)
		}
	}
	for i := range p.Steps {
		for _, from := range byTo[i] {
			out[i] = out[i] || out[from]
		}
	}
	return out
}
