package machine

// A notification resumes its runbook in the webhook's own transaction
// (docs/daemon.md, "resumes in place"): one commit instead of a wake-up,
// a claim and an advance. Expanding a list its result holds does not
// belong there: the work grows with the lists (a nested for-each over a
// 540 KB notification once held a core, the runbook's lock and a
// connection for 94 s, docs/reliability.md "Under attack"), and the
// sender waits for it. So that round expands nothing: the notification
// and the step's completion are committed, the runbook is due at once,
// and an advancer expands the lists in its own transaction, bounded as
// any expansion is (Limits, --max-steps and --max-plan-bytes).

// deferExpansion reports, in a round that expands nothing, whether a
// list is ready to expand (so the runbook is due again now), and marks
// the transition so that the runtime wakes an advancer once it commits.
func (t *transition) deferExpansion() bool {
	p := t.latest()
	b := t.listBinder(p)
	for _, l := range p.Plan.Loops {
		if !t.unexpanded(p, l) {
			continue
		}
		if _, known, _ := t.loopList(p, l, b); known {
			t.ExpansionDeferred = true
			return true
		}
	}
	return false
}
