package machine

import (
	"slices"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// PlanInfo is a decoded plan with the graph the state machine walks.
type PlanInfo struct {
	Plan  *compiler.Plan
	Steps map[string]*compiler.Step
	preds map[string][]string
	// dataEdges holds the edges along which a result flows (to, from); the
	// others only order the steps (:after).
	dataEdges map[[2]string]bool
	// settleEdges holds the status tests' edges (to, from), which wait
	// for their source to settle and never skip (settle_edges.go).
	settleEdges map[[2]string]bool
	// Weight is what the plan counts for in the plan cache.
	Weight int64
	// hooks are the failure hooks' keys, in plan order (hooks.go).
	hooks []string
	// loops indexes the plan's loops by key; instances counts, for each
	// step template that has them, its instances T[0]..T[n-1]; elements
	// says which elements of which loops a step belongs to, and members
	// lists an element's steps, for :parallel (loops.go).
	loops     map[string]*compiler.Loop
	Instances map[string]int
	elements  map[string][]element
	members   map[element][]string
	// inside lists the templates inside each loop, its own and those of
	// the loops within it; width is how many elements each loop has in
	// the plan.
	inside map[string][]string
	width  map[string]int
}

// NewPlanInfo indexes a decoded plan for the machine: its steps by key,
// their predecessors, hooks, templates and loops.
func NewPlanInfo(p *compiler.Plan) *PlanInfo {
	info := &PlanInfo{Plan: p, Steps: make(map[string]*compiler.Step, len(p.Steps)), preds: map[string][]string{},
		dataEdges: map[[2]string]bool{}}
	for _, s := range p.Steps {
		info.Steps[s.Key] = s
		if s.Kind == compiler.KindHook {
			info.hooks = append(info.hooks, s.Key)
		}
	}
	for _, e := range p.Edges {
		if !slices.Contains(info.preds[e.To], e.From) {
			info.preds[e.To] = append(info.preds[e.To], e.From)
		}
		if e.Kind != compiler.EdgeSequence {
			info.dataEdges[[2]string{e.To, e.From}] = true
		}
	}
	info.indexSettleEdges()
	info.indexLoops()
	return info
}

// IsHook reports whether a step is a failure hook.
func (p *PlanInfo) IsHook(key string) bool {
	s, ok := p.Steps[key]
	return ok && s.Kind == compiler.KindHook
}

// IsTemplate reports whether a step is a loop's template, which never
// runs.
func (p *PlanInfo) IsTemplate(key string) bool {
	s, ok := p.Steps[key]
	return ok && s.Loop != ""
}

// isKey reports whether a string is a step key of the plan.
func (p *PlanInfo) isKey(key string) bool {
	_, ok := p.Steps[key]
	return ok
}

// readsResult reports whether step to reads the result of step from, not
// only runs after it.
func (p *PlanInfo) readsResult(to, from string) bool { return p.dataEdges[[2]string{to, from}] }

// onFailure is a step's effective failure mode for a failure whose code
// the call does not name; a failed step's own is failureMode's
// (failure_mode.go).
func (p *PlanInfo) onFailure(key string) rbtype.OnFailure {
	if s, ok := p.Steps[key]; ok {
		return s.OnFailure.Effective()
	}
	return rbtype.OnFailureIsolate
}

// execution finds a verb's frozen execution block: on a step that calls
// it, or, for a verb that only compensates, in the plan's verbs.
func (p *PlanInfo) execution(verb string) (verbs.Execution, bool) {
	if info, ok := p.Plan.Verbs[verb]; ok && info.Execution != nil {
		return *info.Execution, true
	}
	for _, s := range p.Plan.Steps {
		if s.Verb == verb {
			return s.Execution, true
		}
	}
	return verbs.Execution{}, false
}
