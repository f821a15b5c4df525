package machine

import "github.com/runbookdev/runbook/rbtype"

// A list is whole or it is not ready (docs/design/semantics.md, "The forms
// compose"). The list a for-each body's :as @x makes is read only once
// every iteration has settled, and never with an iteration a person may
// yet change: an escalated (or cancelled) step anywhere in an iteration,
// at any depth and not only the template's own instance, or one outside
// the loop that an iteration's step was skipped after, holds the list
// and everything that reads it, skipped until the step is resolved or
// retried, which reopens them (resetBlockedAfter, addBlockedDescendants).
// A list that holds a draft is a draft (draftTaints).

// elementSteps lists the steps of every element of the loop that made a
// template's instances, the template's own instances first: what a list
// is made from, directly or through an earlier step of its iteration.
func (p *PlanInfo) elementSteps(template string) []string {
	var out []string
	for i := range p.Instances[template] {
		out = append(out, InstanceKey(template, i))
	}
	s := p.Steps[template]
	if s == nil || s.Loop == "" {
		return out
	}
	top := p.topLoop(s.Loop)
	for i := range p.width[top] {
		out = append(out, p.members[element{loop: top, index: i}]...)
	}
	return out
}

// heldIteration is the step, among the iterations a template's list is
// made from, that holds the list: escalated or cancelled, which a person
// may yet change. It is "" when none does.
func (t *transition) heldIteration(template string) string {
	seen := map[string]bool{}
	for _, k := range t.plan.elementSteps(template) {
		if held := t.heldBy(k, seen); held != "" {
			return k
		}
	}
	return ""
}

// heldBy is the escalated or cancelled step that keeps key from its end:
// key itself, or, for a step skipped after a predecessor, what held that
// one (an iteration skipped because a step outside the loop escalated is
// held as much as one that escalated).
func (t *transition) heldBy(key string, seen map[string]bool) string {
	if seen[key] {
		return ""
	}
	seen[key] = true
	switch s := t.byKey[key]; {
	case s == nil:
		return ""
	case s.Status == rbtype.StepEscalated || s.Status == rbtype.StepCancelled:
		return key
	case s.Status == rbtype.StepSkipped && s.ErrorCode == "":
		// Through what it waited for, and, for a list, what it is made of.
		for _, p := range append(t.plan.preds[key], t.plan.madeFrom(key)...) {
			if held := t.heldBy(p, seen); held != "" {
				return held
			}
		}
	}
	return ""
}

// draftTaints reports whether a step is a draft for what reads it: skipped
// DRAFT_ONLY, so it has no value; whatever reads it, directly or through
// a list that holds it (or a for-each over it), is a draft too. A step
// that only runs after it (:after) is skipped as after any step that did
// not complete, not as a draft: it did not use what the draft lacks.
func (t *transition) draftTaints(key string) bool {
	s := t.byKey[key]
	return s != nil && s.Status == rbtype.StepSkipped && s.ErrorCode == rbtype.CodeDraftOnly
}

// madeFrom lists, for a template, the steps whose reset reopens it: its
// iterations' steps. Other steps have none beyond their predecessors.
func (p *PlanInfo) madeFrom(key string) []string {
	if !p.IsTemplate(key) {
		return nil
	}
	return p.elementSteps(key)
}

// loopMates lists, for a template, the templates of its loop (its own
// and those of loops within it): they expand together, so what reopens
// one reopens them all. A loop with one template pending and another
// skipped never expands, and would hold its runbook open for ever.
func (p *PlanInfo) loopMates(key string) []string {
	s := p.Steps[key]
	if s == nil || s.Loop == "" || !p.IsTemplate(key) {
		return nil
	}
	return p.inside[s.Loop]
}

// templatesToEnd reports whether a template can end in the next round and
// nothing else would bring one: its last instances, or its list's
// producer, ended in this round's last pass, after the templates were
// looked at. Without the wake-up it asks for, the runbook would wait with
// nothing left to wait on.
func (t *transition) templatesToEnd() bool {
	if len(t.plan.loops) == 0 || !t.Rb.Status.Running() {
		return false
	}
	found := false
	t.eachEndedTemplate(func(*rbtype.Step, int) { found = true })
	if found {
		return true
	}
	for _, s := range t.Steps {
		if t.unexpandedAfter(s) != "" {
			return true
		}
	}
	return false
}
