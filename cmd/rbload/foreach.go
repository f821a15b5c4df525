package main

import (
	"context"
	"fmt"
	"strings"
)

// forEachWidth is how many iterations the for-each measurement's list
// holds: --max-fanout's default, the most one list may.
const forEachWidth = 1000

// forEach measures a fan-out whose width is known only at run time
// (docs/design/language.md v1.3): a step returns a list of 1,000, and a
// for-each over it makes one no-op step per element, expanded by the
// advance that completes the step, then a join after them all. Beside it,
// the same shape written out (a root, 1,000 branches, a join), so the
// figure says what the expansion costs: the writing of 1,000 steps, their
// edges and the grown plan inside one advance, and the template's
// collecting of their results. Each run is runbooks/100 runbooks (at
// least one) on a fresh schema, timed as throughput is: from the first
// STEP_STARTED to the last RUNBOOK_COMPLETED, every step checked to have
// started once.
func (l *lab) forEach(ctx context.Context, r *report) error {
	n := max(1, l.o.runbooks/100)
	// The runs are throughput's, with 1,002 steps a runbook: the list (or
	// the root), the 1,000, and the join: a copy of the lab counts those.
	wide := *l
	wide.o.steps = forEachWidth + 2
	shapes := []struct{ name, label, src string }{
		{"static", fmt.Sprintf("  the same fan-out written out (%d runbooks × %s branches)", n, format(forEachWidth)), fanSource(forEachWidth + 2)},
		{"for-each", fmt.Sprintf("fan-out by for-each (%d runbooks × %s iterations)", n, format(forEachWidth)), forEachSource(forEachWidth)},
	}
	medians := map[string]float64{}
	spreads := map[string]string{}
	for _, shape := range shapes {
		plan, err := compilePlan(shape.src)
		if err != nil {
			return fmt.Errorf("%s: %w", shape.name, err)
		}
		figures := runs{}
		for run := range l.o.runs {
			if _, err := wide.throughputRun(ctx, l.schema("fe"), plan, "", n, 1, figures); err != nil {
				return fmt.Errorf("%s: %w", shape.name, err)
			}
			logf("%s run %d: %s steps/s", shape.name, run+1, format(figures["steps/s"][run]))
		}
		medians[shape.name], spreads[shape.name] = figures.median("steps/s"), figures.spread("steps/s")
	}
	r.add(shapes[1].label, medians["for-each"], "steps/s").
		note("%s", notes(fmt.Sprintf("1 rbd; %.2f× the same fan-out written out, whose steps are stored at submission, outside the timing", medians["for-each"]/medians["static"]),
			spreads["for-each"]))
	r.add(shapes[0].label, medians["static"], "steps/s").note("%s", spreads["static"])
	return nil
}

// forEachSource is a step that returns a list of width numbers, a
// for-each making one no-op step of each, and a join after them all.
func forEachSource(width int) string {
	items := make([]string, width)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	return fmt.Sprintf("(b.noop :items [%s] :as @list)\n(for-each @list.items :as @item (b.noop :v @item :as @each))\n(b.noop :after @each :as @join)\n",
		strings.Join(items, " "))
}
