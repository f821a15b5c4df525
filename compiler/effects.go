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
// before they open). Of several gates in front of a step, the one named is
// the nearest: the last in plan order, which is topological.
func Effects(p *Plan) []Effect {
	index := make(map[string]int, len(p.Steps))
	for i, s := range p.Steps {
		index[s.Key] = i
	}
	// inherited[i] is the nearest gate in front of step i other than its
	// own, nearest[i] the nearest counting its own; -1 for none.
	inherited := make([]int, len(p.Steps))
	nearest := make([]int, len(p.Steps))
	for i := range p.Steps {
		inherited[i] = -1
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
		for _, e := range byTo[i] {
			from, ok := index[e.From]
			if !ok || from >= i {
				continue // not a plan CheckPlan accepts; nothing to add
			}
			flows := nearest[from]
			if e.Kind == EdgeSequence && p.Steps[from].OnFailure == rbtype.OnFailureContinue {
				flows = inherited[from]
			}
			inherited[i] = max(inherited[i], flows)
		}
		nearest[i] = inherited[i]
		if s.Gate != "" && s.Gate != rbtype.GateNone {
			nearest[i] = i
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
