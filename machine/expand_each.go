package machine

import (
	"errors"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// Every loop whose list is known expands in one pass (expandLoops): a
// nested for-each over a notification's lists has, once its outer loop
// has expanded, one inner loop an element, each with its list at once.
// Expanded one by one, each copied, re-encoded and indexed the whole plan
// the ones before it had grown, and the round's result was bound and
// decoded again for each: time in the square of the lists
// (docs/reliability.md, "Under attack", issue 45's row 5). Together, the
// plan is copied, sealed and indexed once a pass, and a pass is needed
// only for each depth of nesting (compiler.Plan.ExpandEachWithin).

// dueLoop is a top-level loop whose list is known and not empty, to be
// expanded in this pass.
type dueLoop struct {
	loop *compiler.Loop
	n    int
}

// expandEach expands the due loops of p together, each bounded before it
// is made as expandLoops bounds one: the steps the runbook would hold
// (--max-steps), counting the loops before it, then the plan's bytes
// (--max-plan-bytes, estimated as it expands). A loop past a bound fails
// FANOUT_TOO_LARGE; the others expand. It reports whether anything
// changed.
func (t *transition) expandEach(p *PlanInfo, due []dueLoop) (progressed bool) {
	total := len(p.Plan.Steps)
	var sizes []compiler.LoopSize
	var kept []dueLoop
	for _, d := range due {
		grows := d.n * len(p.inside[d.loop.Key])
		if err := t.admitExpansion(d.loop, total+grows); err != nil {
			t.failLoop(p, d.loop, err)
			progressed = true
			continue
		}
		total += grows
		sizes = append(sizes, compiler.LoopSize{Key: d.loop.Key, N: d.n})
		kept = append(kept, d)
	}
	if len(kept) == 0 {
		return progressed
	}
	grown, errs := p.Plan.ExpandEachWithin(sizes, t.m.Limits.MaxPlanBytes)
	for i, d := range kept {
		if xerr := errs[i]; xerr != nil {
			code := rbtype.CodeInternal
			if errors.Is(xerr, compiler.ErrPlanTooLarge) {
				code = rbtype.CodeFanoutTooLarge // --max-plan-bytes, estimated before the instances are made
			}
			t.failLoop(p, d.loop, handler.Errorf(code, "expanding the for-each: %v", xerr))
			progressed = true
		}
	}
	if grown == nil {
		return progressed
	}
	t.Grown = NewPlanInfo(grown)
	for i, d := range kept {
		if errs[i] == nil {
			t.event(rbtype.EventMapExpanded, nil, MapExpandedData{Loop: d.loop.Key, Count: d.n, Steps: d.n * len(p.inside[d.loop.Key])})
		}
	}
	return true
}
