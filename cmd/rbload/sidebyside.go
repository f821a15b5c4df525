package main

// sideBySide adds the rows that divide rbd's figures of this run by
// River's (issue 15's targets): leased no-op steps/s at least River's
// no-op jobs/s, for chains and fan-out, and resume p50 at or below
// River's insert-to-work p50. The resume is divided twice: by River's
// insert-to-work as River and the issue time it (from the insert's
// commit), and by River timed as rbd is (from the producer's send). A
// figure this run did not measure (-only
// without throughput or resume) leaves its row out, since a ratio to
// another run's figure would hide how much this machine moves between
// runs.
func (l *lab) sideBySide(r *report, riverJobsPerSecond, riverP50, riverSentP50 float64) {
	for _, shape := range []string{"chain", "fan-out/fan-in"} {
		steps, ok := l.rbdStepsPerSecond[shape]
		if !ok {
			continue
		}
		r.add("rbd "+shape+" steps/s ÷ River jobs/s", steps/riverJobsPerSecond, "×").
			atLeast(1, "≥ 1 (issue 15)").
			note("%s ÷ %s, one worker rbd against one River client", format(steps), format(riverJobsPerSecond))
	}
	if l.rbdResumeP50 > 0 {
		r.add("rbd resume p50 ÷ River insert-to-work p50", l.rbdResumeP50/riverP50, "×").
			atMost(1, "≤ 1 (issue 15)").
			note("%.2f ms ÷ %.2f ms; rbd from the webhook's send, River from its insert's commit", l.rbdResumeP50, riverP50)
		r.add("rbd resume p50 ÷ River insert sent → worked p50", l.rbdResumeP50/riverSentP50, "×").
			atMost(1, "≤ 1 (like for like)").
			note("%.2f ms ÷ %.2f ms; both from the producer's send", l.rbdResumeP50, riverSentP50)
	}
	if len(l.rbdStepsPerSecond) == 0 && l.rbdResumeP50 == 0 {
		logf("river: no rbd figures in this run for the ratios (run it with throughput and resume)")
	}
}
