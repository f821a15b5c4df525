package machine

import "github.com/runbookdev/runbook/rbtype"

// A throttle per call (docs/design/language.md v1.4): `:parallel N` on a
// call inside a for-each body bounds how many of that call's iterations
// are in flight at once, leaving the body's other calls free, so that a
// day's reminders are not held behind one pending decision. The
// for-each's own :parallel (holdsBack, loops.go) still bounds whole
// elements. An iteration is in flight from the moment it is made ready
// until it has ended: ready, waiting for a gate, running, parked or
// waiting to retry.

// callHoldsBack reports whether a call's :parallel keeps an instance from
// becoming ready now: as many instances of its template as the call
// allows are in flight. An instance let through counts as in flight for
// the rest of the pass.
func (t *transition) callHoldsBack(s *rbtype.Step) bool {
	ps := t.plan.Steps[s.Key]
	if ps == nil || ps.Parallel <= 0 {
		return false
	}
	template, _, ok := instanceOf(s.Key)
	if !ok {
		return false
	}
	if t.callFlight == nil {
		t.callFlight = map[string]int{}
	}
	n, counted := t.callFlight[template]
	if !counted {
		for _, o := range t.Steps {
			if base, _, ok := instanceOf(o.Key); ok && base == template && inFlightStatus(o.Status) {
				n++
			}
		}
	}
	if n >= ps.Parallel {
		t.callFlight[template] = n
		return true
	}
	t.callFlight[template] = n + 1
	return false
}

// inFlightStatus reports whether a step in this status has started and
// not ended, for :parallel.
func inFlightStatus(st rbtype.StepStatus) bool {
	switch st {
	case rbtype.StepReady, rbtype.StepWaitingApproval, rbtype.StepRunning, rbtype.StepParked, rbtype.StepFailedRetryable:
		return true
	}
	return false
}
