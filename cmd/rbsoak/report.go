package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// report is the figures of one soak.
type report struct {
	Command  string         `json:"command"`
	Seed     uint64         `json:"seed"`
	Took     string         `json:"took"`
	Runbooks map[string]int `json:"runbooks"` // "kind status" → count
	Steps    map[string]int `json:"steps"`    // status → count
	Effects  effectFigures  `json:"effects"`
	Notices  noticeFigures  `json:"notifications"`
	Faults   []fault        `json:"faults"`
	Driver   driverFigures  `json:"driver"`
	Memory   []string       `json:"memory"`
	Reclaims int            `json:"lease_reclaims"`
	// Failovers counts the switchovers and primary kills, and Recovery
	// the time from each one's start to the first notification stored
	// after it (--failover-cmd).
	Failovers  int      `json:"failovers"`
	Recovery   []string `json:"recovery,omitempty"`
	recovery   []time.Duration
	LogErrors  int      `json:"daemon_error_lines"`
	Violations []string `json:"violations"`
	Kept       string   `json:"kept,omitempty"`
}

type effectFigures struct {
	Effects  int   `json:"effects"`  // distinct idempotency keys with an effect
	Requests int64 `json:"requests"` // requests the service answered
	Replays  int64 `json:"replays"`  // requests repeating a recorded key
	Failed   int64 `json:"failed"`   // answered 500 by a fault
	Hung     int64 `json:"hung"`     // held by a fault
	Refused  int64 `json:"refused"`  // 422 as the runbook asked
	Cancels  int   `json:"cancels"`  // cancel requests from cancelled runbooks
}

type noticeFigures struct {
	Tasks      int   `json:"tasks"`
	Accepted   int64 `json:"accepted"`
	Duplicates int64 `json:"duplicate"`
	Conflicts  int64 `json:"conflict"`
	Retried    int64 `json:"retried"`
	Variants   map[string]int
}

type driverFigures struct {
	SubmitRetries int64 `json:"submit_retries"`
	Approvals     int64 `json:"approvals"`
	Cancels       int64 `json:"cancels"`
}

func newReport(o options, took time.Duration, drv *driver, st *stored, svc *service, n *notifier, inj *injector, c *cluster) *report {
	r := &report{
		Command: command(o),
		Seed:    o.seed, Took: took.Round(time.Second).String(),
		Runbooks: map[string]int{}, Steps: map[string]int{}, Faults: inj.summary(), Reclaims: st.reclaims(),
		recovery:   inj.recoveryTimes(),
		Violations: []string{},
	}
	r.Failovers = len(r.recovery)
	for _, d := range r.recovery {
		r.Recovery = append(r.Recovery, d.Round(time.Millisecond).String())
	}
	for _, sb := range drv.all() {
		status := "missing"
		if rb := st.runbooks[sb.id]; rb != nil {
			status = string(rb.status)
		}
		r.Runbooks[sb.kind.name+" "+status]++
	}
	for _, rb := range st.runbooks {
		for _, s := range rb.steps {
			r.Steps[s.status]++
		}
	}
	svc.mu.Lock()
	r.Effects = effectFigures{Effects: len(svc.effects), Requests: svc.requests.Load(), Replays: svc.replays.Load(),
		Failed: svc.failed.Load(), Hung: svc.hung.Load(), Refused: svc.rejected.Load(), Cancels: len(svc.cancels)}
	r.Notices = noticeFigures{Accepted: n.accepted.Load(), Duplicates: n.duplicates.Load(), Conflicts: n.conflicts.Load(),
		Retried: n.retried.Load(), Variants: map[string]int{}}
	for _, t := range svc.tasks {
		if !t.hold {
			r.Notices.Tasks++
			r.Notices.Variants[t.variant]++
		}
	}
	svc.mu.Unlock()
	r.Driver = driverFigures{SubmitRetries: drv.submitRetries.Load(), Approvals: drv.approvals.Load(), Cancels: drv.cancels.Load()}
	r.LogErrors = countErrorLines(c.logDir)
	return r
}

// command is the command line that repeats the run.
func command(o options) string {
	if o.failoverCmd != "" {
		return fmt.Sprintf("rbsoak --duration %s --seed %d --workers %d --rate %g --fault-gap %s --faults %s --failover-cmd %s --database-url '%s'",
			o.duration, o.seed, o.workers, o.rate, o.faultGap, strings.Join(o.faults, ","), o.failoverCmd, o.databaseURL)
	}
	cmd := fmt.Sprintf("rbsoak --duration %s --seed %d --workers %d --rate %g --fault-gap %s", o.duration, o.seed, o.workers, o.rate, o.faultGap)
	if len(o.faults) != len(faultKinds) {
		cmd += " --faults " + strings.Join(o.faults, ",")
	}
	return cmd
}

func (r *report) violation(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nrbsoak: %s\n", r.Command)
	fmt.Fprintf(w, "  took %s\n", r.Took)
	total := 0
	for _, k := range sortedKeys(r.Runbooks) {
		total += r.Runbooks[k]
	}
	fmt.Fprintf(w, "  runbooks   %d: %s\n", total, joinCounts(r.Runbooks))
	steps := 0
	for _, v := range r.Steps {
		steps += v
	}
	fmt.Fprintf(w, "  steps      %d: %s\n", steps, joinCounts(r.Steps))
	e := r.Effects
	fmt.Fprintf(w, "  effects    %d (service requests %d: replays %d, injected 500s %d, hangs %d, refused %d; cancel requests %d)\n",
		e.Effects, e.Requests, e.Replays, e.Failed, e.Hung, e.Refused, e.Cancels)
	nf := r.Notices
	fmt.Fprintf(w, "  notifications for %d tasks (%s): accepted %d, duplicate %d, conflict %d; resent after 503 or no answer %d\n",
		nf.Tasks, joinCounts(nf.Variants), nf.Accepted, nf.Duplicates, nf.Conflicts, nf.Retried)
	var faults []string
	sum := 0
	for _, f := range r.Faults {
		faults = append(faults, fmt.Sprintf("%s %d", f.Kind, f.Count))
		sum += f.Count
	}
	fmt.Fprintf(w, "  faults     %d: %s\n", sum, strings.Join(faults, ", "))
	fmt.Fprintf(w, "  driver     submissions retried %d, gates approved %d, runbooks cancelled %d\n",
		r.Driver.SubmitRetries, r.Driver.Approvals, r.Driver.Cancels)
	fmt.Fprintf(w, "  leases reclaimed %d; daemon ERROR log lines %d\n", r.Reclaims, r.LogErrors)
	if len(r.recovery) > 0 {
		sorted := slices.Clone(r.recovery)
		slices.Sort(sorted)
		fmt.Fprintf(w, "  failovers  %d; primary lost → first notification stored on the new one: p50 %s, max %s\n",
			len(sorted), sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  memory     %s\n", strings.Join(r.Memory, "; "))
	fmt.Fprintf(w, "  violations %d\n", len(r.Violations))
	for i, v := range r.Violations {
		if i == 50 {
			fmt.Fprintf(w, "    … and %d more (report.json has them all)\n", len(r.Violations)-50)
			break
		}
		fmt.Fprintf(w, "    - %s\n", v)
	}
	if r.Kept != "" {
		fmt.Fprintf(w, "  seed, figures and logs kept in %s\n", r.Kept)
	}
}

func memoryFigures(m *memory, c *cluster) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []string{fmt.Sprintf("api RSS %s once warm, %s at the end, peak %s", mib(m.warm), mib(m.last), mib(c.api.peak))}
	for _, w := range c.workers {
		out = append(out, fmt.Sprintf("%s peak %s (%d starts)", w.name, mib(w.peak), w.starts))
	}
	return out
}

// logViolations finds what must never be in a daemon's log: a panic, or a
// data race report from a binary built with -race.
func logViolations(dir string) []string {
	var out []string
	scanLogs(dir, func(name, line string) {
		if strings.HasPrefix(line, "panic:") || strings.Contains(line, "WARNING: DATA RACE") || strings.HasPrefix(line, "fatal error:") {
			out = append(out, fmt.Sprintf("%s log: %s", name, line))
		}
	})
	return out
}

// countErrorLines counts the daemons' ERROR lines: expected during
// faults, a figure rather than a violation.
func countErrorLines(dir string) int {
	n := 0
	scanLogs(dir, func(name, line string) {
		if name != "postgres.log" && strings.Contains(line, `"level":"ERROR"`) {
			n++
		}
	})
	return n
}

func scanLogs(dir string, fn func(name, line string)) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			fn(e.Name(), sc.Text())
		}
		f.Close()
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinCounts(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
