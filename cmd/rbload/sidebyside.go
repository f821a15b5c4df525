package main

import "fmt"

// sideBySide adds the rows that divide rbd's figures of this run by
// River's: leased no-op steps/s at least 0.6 of River's no-op jobs/s for
// chains and 0.9 for fan-out (BENCHMARKS.md: targets, on the way to issue
// 15's 1), and resume p50 at or below River's insert-to-work p50. The resume is divided twice: by River's
// insert-to-work as River and the issue time it (from the insert's
// commit), and by River timed as rbd is (from the producer's send). A
// figure this run did not measure (-only
// without throughput or resume) leaves its row out, since a ratio to
// another run's figure would hide how much this machine moves between
// runs.
func (l *lab) sideBySide(r *report, riverJobsPerSecond, riverP50, riverSentP50 float64) {
	for _, shape := range []struct {
		name   string
		target float64
	}{{"chain", 0.6}, {"fan-out/fan-in", 0.9}} {
		steps, ok := l.rbdStepsPerSecond[shape.name]
		if !ok {
			continue
		}
		r.add("rbd "+shape.name+" steps/s ÷ River jobs/s", steps/riverJobsPerSecond, "×").
			atLeast(shape.target, fmt.Sprintf("≥ %g (target)", shape.target)).
			note("%s ÷ %s, one worker rbd against one River client", format(steps), format(riverJobsPerSecond))
	}
	if l.rbdResumeP50 > 0 {
		r.add("rbd resume p50 ÷ River insert-to-work p50", l.rbdResumeP50/riverP50, "×").
			atMost(1, "≤ 1 (target)").
			note("%.2f ms ÷ %.2f ms; rbd from the webhook's send, River from its insert's commit", l.rbdResumeP50, riverP50)
		r.add("rbd resume p50 ÷ River insert sent → worked p50", l.rbdResumeP50/riverSentP50, "×").
			atMost(1, "≤ 1 (like for like)").
			note("%.2f ms ÷ %.2f ms; both from the producer's send", l.rbdResumeP50, riverSentP50)
	}
	if len(l.rbdStepsPerSecond) == 0 && l.rbdResumeP50 == 0 {
		logf("river: no rbd figures in this run for the ratios (run it with throughput and resume)")
	}
}

// besideDBOS adds the rows that set rbd's figures of this run beside DBOS
// Transact's (BENCHMARKS.md: targets): chain steps/s at least five times
// DBOS's, and resume p50 and p99 at or below DBOS's Send → next step. As
// beside River, a figure this run did not measure leaves its row out.
func (l *lab) besideDBOS(r *report, dbosStepsPerSecond, dbosP50, dbosP99 float64) {
	if steps, ok := l.rbdStepsPerSecond["chain"]; ok {
		r.add("rbd chain steps/s ÷ DBOS steps/s", steps/dbosStepsPerSecond, "×").
			atLeast(5, "≥ 5 (target)").
			note("%s ÷ %s, one worker rbd against one DBOS process", format(steps), format(dbosStepsPerSecond))
	}
	if l.rbdResumeP50 > 0 {
		r.add("rbd resume p50 ÷ DBOS Send → next step p50", l.rbdResumeP50/dbosP50, "×").
			atMost(1, "≤ 1 (target)").
			note("%.2f ms ÷ %.2f ms; both from the producer's send to the next step's start", l.rbdResumeP50, dbosP50)
		r.add("rbd resume p99 ÷ DBOS Send → next step p99", l.rbdResumeP99/dbosP99, "×").
			atMost(1, "≤ 1 (target)").
			note("%.2f ms ÷ %.2f ms", l.rbdResumeP99, dbosP99)
	}
	if _, ok := l.rbdStepsPerSecond["chain"]; !ok && l.rbdResumeP50 == 0 {
		logf("dbos: no rbd figures in this run for the ratios (run it with throughput and resume)")
	}
}
