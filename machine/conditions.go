package machine

import (
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
)

// decideConditions decides the conditions of the steps propagate found
// due (every predecessor ended), with their data in hand: false skips the
// step (CONDITION_FALSE, its gate never requested), true makes it ready,
// and an operand that cannot be read fails it. The steps downstream of a
// skip are skipped or freed by the next propagate, in the same round.
func (t *transition) decideConditions() {
	due := t.condDue
	t.condDue = nil
	if len(due) == 0 {
		return
	}
	b := t.stepBinder(nil)
	hb := (*Binder)(nil)
	for _, s := range due {
		if s.Status != rbtype.StepPending {
			continue
		}
		ps := t.plan.Steps[s.Key]
		sb := b
		if ps.Kind == compiler.KindHook {
			if hb == nil {
				hb = t.stepBinder(s)
			}
			sb = hb
		}
		ok, err := evalCond(ps.When, sb)
		switch {
		case err != nil && t.Rb.Mode == rbtype.ModeDryRun && t.dependsOnSimulated(s):
			// What it reads was simulated: the dry run goes on, and the
			// step is simulated in turn when its arguments cannot be read.
			t.makeReady(s)
		case err != nil:
			t.failStep(s, err)
		case !ok:
			t.moveStep(s, rbtype.StepSkipped)
			s.FinishedAt = &t.Now
			s.ErrorCode, s.ErrorMessage = rbtype.CodeConditionFalse, "its condition "+ps.When.String()+" was false"
			t.touch(s)
			t.event(rbtype.EventStepSkipped, s, StepSkippedData{Reason: rbtype.CodeConditionFalse})
		default:
			t.makeReady(s)
		}
	}
}

// stepBinder is the binder of a step's arguments and condition: the
// results in hand (completed in this round, or fetched for it), the
// inputs, and the plan's keys. For a hook (hook not nil) a reference to a
// step that did not complete is null, and @failure is the runbook's.
func (t *transition) stepBinder(hook *rbtype.Step) *Binder {
	b := t.listBinder(t.plan)
	b.status = t.languageStatus
	if hook != nil && t.isHookStep(hook) {
		b.hook, b.failure, b.failures = true, t.failureValue(), t.failuresValue()
		// A step that did not complete has no result, whatever is cached.
		for key := range b.Results {
			if st := t.statusOf(key); st != rbtype.StepComplete {
				delete(b.Results, key)
			}
		}
	}
	return b
}

// hookRefs lists the steps a hook's arguments and condition read that
// completed and whose results are not in hand: a hook has no edges, so
// what it reads is fetched by its references.
func (t *transition) hookRefs(s *rbtype.Step) []string {
	ps := t.plan.Steps[s.Key]
	if ps == nil {
		return nil
	}
	var want []string
	add := func(ref string) {
		key, _, ok := compiler.SplitRef(ref, t.plan.isKey)
		if !ok || t.statusOf(key) != rbtype.StepComplete {
			return
		}
		if _, have := t.resultOf(key); !have {
			want = append(want, key)
		}
	}
	compiler.ValueRefs(map[string]any(ps.Args), add)
	if ps.When != nil {
		ps.When.Refs(add)
	}
	return want
}
