package machine

import (
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
)

// Settle edges (docs/design/language.md v1.4, docs/design/semantics.md
// section 15, "A status test waits for the step"): a condition that reads
// (status @x) joins @x by an edge of kind settle. Its step waits until @x
// has settled, whatever it settled with, and is never skipped by it: a
// failed, skipped, cancelled or escalated @x still lets the step decide
// its condition. That is the "else" of a step,
// (iam.revoke :when (!= (status @review) "succeeded")), which must run
// when the review failed, was skipped or timed out.
//
// A field of a settled step that did not succeed does not exist: it has
// no result, so (exists @x.field) is false and (default @x.field V) is V,
// while a plain reference fails the step MISSING_REQUIRED_CONTEXT, as a
// missing field always does.

// indexSettleEdges records the plan's settle edges apart from its data
// edges: a settle edge orders its steps and hands over the result when
// there is one (readsResult), but it never skips its reader.
func (p *PlanInfo) indexSettleEdges() {
	for _, e := range p.Plan.Edges {
		if e.Kind != compiler.EdgeSettle {
			continue
		}
		if p.settleEdges == nil {
			p.settleEdges = map[[2]string]bool{}
		}
		p.settleEdges[[2]string{e.To, e.From}] = true
	}
}

// settles reports whether step to waits for step from to settle (a status
// test) rather than to succeed.
func (p *PlanInfo) settles(to, from string) bool { return p.settleEdges[[2]string{to, from}] }

// settleWait is what a settle edge from pred means to the pending step
// that reads it: settled (any final status) lets it go on to its
// condition; anything else holds it. A step not loaded is complete.
func settleWait(pred *rbtype.Step) (settled bool) {
	return pred == nil || pred.Status.Done()
}

// settledWithoutResult reports whether pred is joined to s by a settle
// edge and settled without completing: s reads no result of it, so none
// is fetched or waited for.
func (t *transition) settledWithoutResult(s *rbtype.Step, pred string) bool {
	if !t.plan.settles(s.Key, pred) {
		return false
	}
	ps := t.byKey[pred]
	return ps != nil && ps.Status.Done() && ps.Status != rbtype.StepComplete
}

// languageStatus is the status (status @x) reads (docs/design/language.md
// v1.4): the runtime's final statuses under the language's names. A step
// that has not settled has none (ok false): the settle edge keeps its
// readers waiting until it has, so only a plan that skipped the edge would
// ask, and it is refused rather than answered with a guess.
func (t *transition) languageStatus(key string) (string, bool) {
	switch t.statusOf(key) {
	case rbtype.StepComplete:
		return "succeeded", true
	case rbtype.StepFailed:
		return "failed", true
	case rbtype.StepSkipped:
		return "skipped", true
	case rbtype.StepCancelled:
		return "cancelled", true
	case rbtype.StepEscalated:
		return "escalated", true
	}
	return "", false
}
