package refmodel

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// The step statuses the model uses: the machine's, with running standing
// for a call out (ready and running).
const (
	Pending   = "pending"
	Running   = "running"
	Parked    = "parked"
	Waiting   = "waiting_approval"
	Complete  = "complete"
	Failed    = "failed"
	Skipped   = "skipped"
	Cancelled = "cancelled"
	Escalated = "escalated"
	InDoubt   = "in_doubt"
	// Held is a step that would start but waits for budget (ready,
	// BUDGET_EXCEEDED).
	Held = "budget_held"
	// starting is a step whose turn came in this pass, to start once
	// every step's turn is decided (pass); no step stays so.
	starting = "starting"
)

// BudgetExceeded is the code of a step failed because the runbook's budget
// was spent before it started.
const BudgetExceeded = "BUDGET_EXCEEDED"

// The skip reasons the model tells apart.
const (
	ConditionFalse  = "CONDITION_FALSE"
	UpstreamSkipped = "UPSTREAM_SKIPPED"
	DraftOnly       = "DRAFT_ONLY"
	NoFailure       = "NO_FAILURE"
)

// S is one step's state in the interpreter.
type S struct {
	Key    string
	Verb   Verb
	Status string
	// Reason is the skip's reason ("" for a skip after a failure); Code
	// a failure's code, when the model tells it apart.
	Reason, Code string
	// Value is a complete step's result.
	Value any
	// def is the step (or, for an instance, its template) as generated.
	def *Step
	// loop is the loop a template belongs to; template is an instance's.
	loop     *Loop
	template string
	index    int
	// preds are what it reads; after, what it only runs after; settle,
	// the one of preds its status test waits for to settle, if any.
	preds, after []string
	settle       string
	approved     bool
	// hook marks a failure hook; Comp is the state of the step's
	// compensation ("", pending, running, complete, failed, skipped),
	// seq when it last completed.
	hook bool
	Comp string
	seq  int
	// out: its call is out (a cancelled step's too, until it returns or
	// its worker dies), holding what it reserved.
	out bool
	// elem is an instance's element; outer, for the steps an inner loop
	// made (a template's instance for one outer element, and its own
	// instances), the outer element's index.
	elem  any
	outer int
}

// Interp is the reference interpreter's state of one runbook.
type Interp struct {
	rb     *Runbook
	Steps  map[string]*S
	Order  []string
	Status string
	Draft  bool
	// Seen counts the rules where forms meet as they were applied, so
	// that a run can say what it exercised.
	Seen map[string]int
	// Cap is the runbook's cost budget (0: none), Spent what its calls
	// reported spending, Over what they spent beyond what they reserved,
	// summed: the most spend may pass the cap by.
	Cap, Spent, Over float64
	// Finished: an ended runbook whose compensations and failure hooks
	// have all run. seq counts completions.
	Finished bool
	seq      int
	// innerLater makes the inner lists' instances of this pass's
	// expansions (expand).
	innerLater []func()
}

// New is a runbook's state before anything ran.
func New(rb *Runbook) *Interp {
	in := &Interp{rb: rb, Steps: map[string]*S{}, Status: "executing", Draft: rb.Draft, Seen: map[string]int{}, Cap: rb.Cap}
	for _, it := range rb.Items {
		if it.Step != nil {
			s := &S{Key: it.Step.Key, Verb: it.Step.Verb, def: it.Step, preds: slices.Clone(it.Step.Reads), after: it.Step.After}
			if w := it.Step.When; w != nil && !slices.Contains(s.preds, w.Ref) {
				s.preds = append(s.preds, w.Ref) // a condition reads what it tests
				if w.Status != "" {
					s.settle = w.Ref
				}
			}
			in.add(s)
			continue
		}
		for l := it.Loop; l != nil; l = l.Inner {
			for _, s := range l.Body {
				t := &S{Key: s.Key, Verb: s.Verb, def: s, loop: l, preds: []string{it.Loop.Over}}
				for _, r := range s.Reads {
					if !rb.sameIteration(r, s.Key) {
						t.preds = append(t.preds, r)
					}
				}
				t.after = s.After
				in.add(t)
			}
		}
	}
	for _, h := range rb.Hooks {
		in.add(&S{Key: h.Key, Verb: h.Verb, def: h, hook: true})
	}
	return in
}

// Reorder puts the steps in the order given (a compiled plan's, which
// is topological), which decides what happens first when two things
// happen at once: two parks timing out together, the elements :parallel
// lets through.
func (in *Interp) Reorder(keys []string) {
	if len(keys) == len(in.Order) {
		in.Order = slices.Clone(keys)
	}
}

func (in *Interp) add(s *S) {
	s.Status = Pending
	in.Steps[s.Key] = s
	in.Order = append(in.Order, s.Key)
}

// instance is the key of template's instance i.
func instance(template string, i int) string { return template + "[" + strconv.Itoa(i) + "]" }

func (in *Interp) isTemplate(s *S) bool { return s.loop != nil }

// done reports whether a status is final.
func done(st string) bool {
	return st == Complete || st == Failed || st == Skipped || st == Cancelled || st == Escalated
}

// Settle applies the rules until nothing changes.
func (in *Interp) Settle() {
	for in.Status == "executing" && in.pass() {
	}
	if in.Status == "executing" {
		in.settleRunbook()
	}
	in.afterEnd()
}

// runsHooks reports whether a runbook that ended so runs its failure
// hooks; compensates, whether it undoes its completed steps first.
func runsHooks(status string) bool {
	return status == "failed" || status == "partial" || status == "cancelled"
}

func compensates(status string) bool { return status == "failed" || status == "cancelled" }

// markUndo marks every completed step whose verb is undone as waiting to
// be undone.
func (in *Interp) markUndo() {
	for _, k := range in.Order {
		if s := in.Steps[k]; s.Status == Complete && s.Verb == Keep && !in.isTemplate(s) {
			s.Comp = Pending
		}
	}
}

// afterEnd runs what follows a runbook's end: its compensations one at a
// time, the last completed first (a draft's are skipped: Undo reaches
// outside), then its failure hooks, all at once, each as a step (its
// gate, its budget); the runbook is finished once they have all ended.
func (in *Interp) afterEnd() {
	switch {
	case in.Status == "complete":
		in.skipHooks()
		in.Finished = true
		return
	case !runsHooks(in.Status):
		return
	}
	for compensates(in.Status) {
		var next *S
		for _, k := range in.Order {
			switch s := in.Steps[k]; {
			case s.Comp == Running:
				return // one at a time
			case s.Comp == Pending && (next == nil || s.seq > next.seq):
				next = s
			}
		}
		if next == nil {
			break
		}
		if in.Draft {
			next.Comp = Skipped
			continue
		}
		next.Comp = Running
		in.Seen["compensation"]++
		return
	}
	ended := true
	for _, k := range in.Order {
		s := in.Steps[k]
		if !s.hook {
			continue
		}
		if s.Status == Pending {
			in.Seen["failure hook"]++
			if in.turn(s); s.Status == starting {
				in.start(s)
			}
		}
		ended = ended && done(s.Status)
	}
	in.Finished = ended
}

// skipHooks skips the hooks of a runbook that ended with no failure for
// them to follow.
func (in *Interp) skipHooks() {
	for _, k := range in.Order {
		if s := in.Steps[k]; s.hook && s.Status == Pending {
			in.skip(s, NoFailure)
		}
	}
}

// rearmHooks makes pending again the hooks skipped for want of a failure:
// the runbook runs again, and may yet fail.
func (in *Interp) rearmHooks() {
	for _, k := range in.Order {
		if s := in.Steps[k]; s.hook && s.Status == Skipped && s.Reason == NoFailure {
			s.Status, s.Reason = Pending, ""
		}
	}
}

// hooking reports whether the runbook runs its failure hooks now.
func (in *Interp) hooking() bool {
	if !runsHooks(in.Status) || in.Finished {
		return false
	}
	for _, s := range in.Steps {
		if s.Comp == Pending || s.Comp == Running {
			return false
		}
	}
	return true
}

// undone reports whether a step's compensation ran, or runs: a runbook so
// undone is not retried.
func (in *Interp) undone() bool {
	for _, s := range in.Steps {
		if s.Comp != "" && s.Comp != Skipped {
			return true
		}
	}
	return false
}

// pass applies every rule once; it reports whether anything changed.
func (in *Interp) pass() bool {
	changed := false
	// The pass is ordered as the machine's round is, since the order
	// decides what an abort as a step starts finds, and who takes the one
	// place a budget leaves. First every pending step's readiness, in
	// order, so that skips cascade; :parallel counts the elements in
	// flight as this pass starts, and each element let through joins them.
	flight := map[string]map[int]bool{}
	var due []*S
	for _, k := range in.Order {
		if s := in.Steps[k]; s.Status == Pending && !in.isTemplate(s) && !s.hook {
			moved, cond := in.ready(s, flight)
			changed = changed || moved
			if cond {
				due = append(due, s)
			}
		}
	}
	// Then loops expand once their list is known, or are skipped with
	// it, and templates end once their instances have: the steps these
	// make or free are looked at in the next pass.
	if in.endEmptyLists() {
		changed = true
	}
	for _, it := range in.rb.Items {
		if it.Loop != nil && in.expand(it.Loop) {
			changed = true
		}
	}
	// The inner lists' instances come after every loop's own, in the
	// order their lists were made: the machine expands the loops whose
	// lists it knows one after another, inner ones after the plan's.
	for _, f := range in.innerLater {
		f()
	}
	in.innerLater = nil
	for _, k := range in.Order {
		if s := in.Steps[k]; s.Status == Pending && in.isTemplate(s) && in.endTemplate(s) {
			changed = true
		}
	}
	// Then conditions are decided, and the steps whose turn came start,
	// in order, with those a budget held: a step's budget is judged as it
	// starts, once every step's turn (its condition, its gate) is decided.
	for _, s := range due {
		in.decide(s)
		changed = true
	}
	for _, k := range in.Order {
		if s := in.Steps[k]; s.Status == starting || s.Status == Held {
			if in.start(s); s.Status != Held {
				changed = true
			}
		}
	}
	return changed
}

// expand makes a loop's instances once its producer completed, or skips
// its templates when the producer ended otherwise. An inner loop's
// templates get an instance for each element, itself the template of the
// element's list, whose instances are made at once, after the outer
// ones, as the machine expands an inner loop whose list it knows.
func (in *Interp) expand(l *Loop) bool {
	first := in.Steps[l.Body[0].Key]
	if in.instances(first.Key) > 0 {
		return false
	}
	p := in.Steps[l.Over]
	templates := in.templatesOf(l)
	if blocks(p) {
		// Each template still pending is skipped with its list (one a
		// retry made pending again, say, while the list stays a draft).
		changed := false
		for _, t := range templates {
			if t.Status == Pending {
				in.skipAfter(t, p)
				changed = true
			}
		}
		return changed
	}
	for _, t := range templates {
		if t.Status != Pending {
			return false
		}
	}
	if p.Status != Complete {
		return false
	}
	list, _ := p.Value.(map[string]any)["v"].([]any)
	if len(list) == 0 {
		for _, t := range templates {
			in.complete(t, []any{})
		}
		return true
	}
	for i, e := range list { // element by element, as the plan grows
		for _, b := range l.Body {
			in.add(in.instanceOf(b, instance(b.Key, i), b.Key, i, i, e, func(r string) string { return instance(r, i) }))
		}
		m := l.Inner
		if m == nil {
			continue
		}
		for _, b := range m.Body {
			inner, _ := e.([]any)
			bi := in.instanceOf(b, instance(b.Key, i), b.Key, i, i, inner, func(r string) string { return instance(r, i) })
			bi.loop = m // the template of element i's inner list
			in.add(bi)
			in.Seen["inner list made"]++
			if len(inner) == 0 {
				continue // it completes in the next pass (endEmptyLists)
			}
			in.innerLater = append(in.innerLater, func() {
				for j, f := range inner {
					in.add(in.instanceOf(b, instance(bi.Key, j), bi.Key, j, i, f, func(r string) string { return instance(r, i) }))
				}
			})
		}
	}
	return true
}

// endEmptyLists completes, with [], the inner lists' templates made for
// an element whose list is empty: in the pass after the one that made
// them, as the machine completes them in the round after.
func (in *Interp) endEmptyLists() bool {
	changed := false
	for _, k := range in.Order {
		s := in.Steps[k]
		if list, ok := s.elem.([]any); ok && s.loop != nil && s.template != "" && s.Status == Pending && len(list) == 0 {
			in.complete(s, []any{})
			changed = true
		}
	}
	return changed
}

// templatesOf lists a loop's templates, its inner loop's among them.
func (in *Interp) templatesOf(l *Loop) []*S {
	var out []*S
	for m := l; m != nil; m = m.Inner {
		for _, b := range m.Body {
			out = append(out, in.Steps[b.Key])
		}
	}
	return out
}

// instanceOf is an instance of b keyed key, of template and index, for
// outer element outer, with element elem; same maps what b reads of its
// own iteration to that iteration's step.
func (in *Interp) instanceOf(b *Step, key, template string, index, outer int, elem any, same func(string) string) *S {
	l := in.rb.outerOf(b.Key)
	inst := &S{Key: key, Verb: b.Verb, def: b, template: template, index: index, outer: outer, elem: elem, preds: []string{l.Over}}
	for _, r := range b.Reads {
		if in.rb.sameIteration(r, b.Key) {
			inst.preds = append(inst.preds, same(r))
		} else {
			inst.preds = append(inst.preds, r)
		}
	}
	if w := b.When; w != nil && w.Status != "" { // a status test of its own iteration's step
		inst.settle = same(w.Ref)
		inst.preds = append(inst.preds, inst.settle)
	}
	for _, r := range b.After {
		if in.rb.sameIteration(r, b.Key) {
			inst.after = append(inst.after, same(r))
		} else {
			inst.after = append(inst.after, r)
		}
	}
	return inst
}

func (in *Interp) instances(template string) int {
	n := 0
	for in.Steps[instance(template, n)] != nil {
		n++
	}
	return n
}

// element is the element value an instance's loop hands it.
func (in *Interp) element(s *S) any { return s.elem }

// members lists the steps of element i of template t's loop: of a
// top-level template, every step its outer element made (the outer
// body's instances, the inner templates' instances and theirs); of an
// inner list's template, its own instance i.
func (in *Interp) members(t *S, i int) []string {
	if t.template != "" {
		return []string{instance(t.Key, i)}
	}
	l := in.rb.outerOf(t.Key)
	var out []string
	for _, b := range l.Body {
		out = append(out, instance(b.Key, i))
	}
	if m := l.Inner; m != nil {
		for _, b := range m.Body {
			bi := instance(b.Key, i)
			out = append(out, bi)
			for j := range in.instances(bi) {
				out = append(out, instance(bi, j))
			}
		}
	}
	return out
}

// endTemplate ends a template whose instances have all ended: held
// (skipped) while any step of an iteration is escalated or cancelled, a
// draft when an instance is, else the list of results with null for an
// instance that did not complete.
func (in *Interp) endTemplate(t *S) bool {
	n := in.instances(t.Key)
	if n == 0 {
		return false
	}
	for i := range n {
		if !done(in.Steps[instance(t.Key, i)].Status) {
			return false
		}
	}
	for i := range n {
		for _, k := range in.members(t, i) {
			if in.held(k, map[string]bool{}) {
				in.skip(t, "")
				return true
			}
		}
	}
	list := make([]any, n)
	for i := range n {
		is := in.Steps[instance(t.Key, i)]
		if is.Status == Skipped && is.Reason == DraftOnly {
			in.skip(t, DraftOnly)
			return true
		}
		if is.Status == Complete {
			list[i] = is.Value
		}
	}
	in.complete(t, list)
	return true
}

// held reports whether a person may yet change how key ended: it
// escalated or was cancelled, or it was skipped after one that was held.
func (in *Interp) held(key string, seen map[string]bool) bool {
	if seen[key] {
		return false
	}
	seen[key] = true
	s := in.Steps[key]
	switch {
	case s.Status == Escalated || s.Status == Cancelled:
		return true
	case s.Status == Skipped && s.Reason == "":
		from := append(slices.Clone(s.preds), s.after...)
		if in.isTemplate(s) {
			for i := range in.instances(s.Key) {
				from = append(from, in.members(s, i)...)
			}
		}
		for _, p := range from {
			if in.held(p, seen) {
				return true
			}
		}
	}
	return false
}

// ready moves a pending step as far as it goes: skipped after a
// predecessor that did not complete, held by :parallel, due to have its
// condition decided (due), a draft, at its gate, or starting.
func (in *Interp) ready(s *S, flight map[string]map[int]bool) (moved, due bool) {
	// A predecessor that will never complete skips it: one it reads, or
	// one it runs after unless that one's end was accepted (a failure
	// under continue) or quiet (a false condition, and what that skipped).
	// A read quiet skip skips it quietly. In a draft, a step reaching
	// outside, or one reading a draft, is a draft.
	var blocked, quiet, taint bool
	for _, k := range s.preds {
		p := in.Steps[k]
		switch {
		case k == s.settle:
			// A status test waits for its step to settle, whatever it
			// settled with, but a draft has no status to test: it taints.
			if p.Status == Skipped && p.Reason == DraftOnly {
				blocked, taint = true, true
			}
		case p.Status == Skipped && (p.Reason == ConditionFalse || p.Reason == UpstreamSkipped):
			quiet = true
		case blocks(p):
			blocked = true
			taint = taint || p.Status == Skipped && p.Reason == DraftOnly
		}
	}
	for _, k := range s.after {
		p := in.Steps[k]
		switch {
		case p.Status == Failed && p.Verb.Mode() == "continue":
		case p.Status == Skipped && (p.Reason == ConditionFalse || p.Reason == UpstreamSkipped):
		case blocks(p):
			blocked = true
		}
	}
	switch {
	case blocked && in.Draft && (s.Verb.Outside() || taint):
		in.skip(s, DraftOnly)
		return true, false
	case blocked:
		in.skip(s, "")
		return true, false
	case quiet:
		in.skip(s, UpstreamSkipped)
		return true, false
	}
	for _, k := range append(slices.Clone(s.preds), s.after...) {
		if st := in.Steps[k].Status; st != Complete && !done(st) {
			return false, false
		}
	}
	// An abort happens once, as the step fails (fail): steps a later
	// command makes pending run.
	if s.template != "" && !in.letThrough(s, flight) {
		return false, false
	}
	if s.def.When != nil {
		return false, true
	}
	in.turn(s)
	return true, false
}

// decide decides a step's condition once its turn came: false skips it,
// true lets it take its turn. The machine decides them after every step's
// readiness and before anything starts, so the steps a false condition
// skips downstream are skipped in the next pass.
func (in *Interp) decide(s *S) {
	if w := s.def.When; w.Status != "" {
		if in.Steps[s.settle].Status != Complete {
			in.Seen["status test of a step that did not succeed"]++
		}
		if (statusName(in.Steps[s.settle].Status) == w.Status) == w.Not {
			in.skip(s, ConditionFalse)
			return
		}
	} else {
		var v any
		if w.Item {
			v = in.element(s)
		} else {
			v = in.Steps[w.Ref].Value.(map[string]any)["v"]
		}
		if n, ok := v.(float64); !ok || n >= float64(w.Below) {
			in.skip(s, ConditionFalse)
			return
		}
	}
	in.turn(s)
}

// turn is a step's turn: a draft's outside step is skipped, a gate asks,
// anything else starts with the pass's others.
func (in *Interp) turn(s *S) {
	switch {
	case in.Draft && s.Verb.Outside():
		in.skip(s, DraftOnly)
	case s.Verb == Gate && !s.approved:
		s.Status = Waiting
	default:
		s.Status = starting
	}
}

// start starts a step whose turn came, under the runbook's budget
// (docs/design/semantics.md, "Budgets hold under concurrency"): a step
// whose verb declares a cost reserves it, and waits (held) while spend
// and what runs now reserved leave too little; one whose verb declares
// none waits while another such step runs, and fails BUDGET_EXCEEDED once
// the budget is spent.
func (in *Interp) start(s *S) {
	defer func() { s.out = s.Status == Running }()
	if in.Cap <= 0 {
		s.Status = Running
		return
	}
	var reserved float64
	uncosted := false
	for _, k := range in.Order {
		switch o := in.Steps[k]; {
		case o == s || o.hook:
		case o.Verb == Paid && o.out:
			reserved += PaidCost
		case o.Verb != Paid && o.Status == Running:
			uncosted = true
		}
	}
	switch {
	case s.Verb == Paid && in.Spent+reserved+PaidCost > in.Cap:
		if s.Status != Held {
			in.Seen["start held by the budget"]++
		}
		s.Status = Held
	case s.Verb == Paid:
		s.Status = Running
	case uncosted:
		s.Status = Held
	case in.Spent+reserved >= in.Cap:
		in.Seen["step failed, its budget spent"]++
		s.Code = BudgetExceeded
		in.fail(s)
	default:
		s.Status = Running
	}
}

// statusName is a final status as (status @x) names it.
func statusName(st string) string {
	if st == Complete {
		return "succeeded"
	}
	return st
}

// letThrough applies :parallel to an instance about to take its turn:
// its top-level loop's, counting outer elements, and for an inner list's
// instance its inner loop's too, counting that list's elements. It lets
// the instance through, and counts its element in flight, only when both
// have room.
func (in *Interp) letThrough(s *S, flight map[string]map[int]bool) bool {
	type bound struct {
		key   string
		limit int
		index int
		count func() map[int]bool
	}
	var bounds []bound
	base, outer := s.template, s.index
	if ts := in.Steps[s.template]; ts.template != "" { // an inner list's instance
		base, outer = ts.template, s.outer
		if m := in.rb.loopOf(base); m.Parallel > 0 {
			bounds = append(bounds, bound{ts.Key, m.Parallel, s.index, func() map[int]bool { return in.innerFlight(ts) }})
		}
	}
	if l := in.rb.outerOf(base); l.Parallel > 0 {
		bounds = append(bounds, bound{l.Body[0].Key, l.Parallel, outer, func() map[int]bool { return in.inFlight(l) }})
	}
	for _, b := range bounds {
		if flight[b.key] == nil {
			flight[b.key] = b.count()
		}
		if f := flight[b.key]; !f[b.index] && len(f) >= b.limit {
			return false
		}
	}
	for _, b := range bounds {
		flight[b.key][b.index] = true
	}
	return true
}

// inFlight is the set of a top-level loop's elements with a step started
// and a step not ended, an inner list's template (which no call starts)
// counting as not ended until it has.
func (in *Interp) inFlight(l *Loop) map[int]bool {
	f := map[int]bool{}
	t := in.Steps[l.Body[0].Key]
	for i := range in.instances(t.Key) {
		started, active := false, false
		for _, k := range in.members(t, i) {
			m := in.Steps[k]
			if m == nil {
				continue
			}
			if m.Status != Pending && !in.isTemplate(m) {
				started = true
			}
			if !done(m.Status) {
				active = true // an inner list not yet ended too
			}
		}
		if started && active {
			f[i] = true
		}
	}
	return f
}

// innerFlight is the set of an inner list's elements in flight: its
// instances started and not ended.
func (in *Interp) innerFlight(t *S) map[int]bool {
	f := map[int]bool{}
	for j := range in.instances(t.Key) {
		if st := in.Steps[instance(t.Key, j)].Status; st != Pending && !done(st) {
			f[j] = true
		}
	}
	return f
}

// blocks reports whether a final status keeps dependents from running.
func blocks(s *S) bool {
	return s.Status == Failed || s.Status == Skipped || s.Status == Cancelled || s.Status == Escalated
}

func (in *Interp) skip(s *S, reason string) {
	s.Status, s.Reason, s.Value, s.Code = Skipped, reason, nil, ""
}

// skipAfter skips s because p ended without completing.
func (in *Interp) skipAfter(s, p *S) {
	switch {
	case p.Status == Skipped && (p.Reason == ConditionFalse || p.Reason == UpstreamSkipped):
		in.skip(s, UpstreamSkipped)
	case p.Status == Skipped && p.Reason == DraftOnly:
		in.skip(s, DraftOnly)
	default:
		in.skip(s, "")
	}
}

func (in *Interp) complete(s *S, v any) {
	in.seq++
	s.seq = in.seq
	s.Status, s.Value, s.Reason, s.Code = Complete, v, "", ""
}

// aborted reports whether a step failed under abort.
func (in *Interp) aborted() bool {
	for _, s := range in.Steps {
		if s.Status == Failed && s.Verb.Mode() == "abort" && !s.hook {
			return true
		}
	}
	return false
}

// fail fails a step; under abort, every step not started is skipped and
// every park cancelled.
func (in *Interp) fail(s *S) {
	s.Status, s.Value = Failed, nil
	if s.Verb.Mode() != "abort" || s.hook {
		return // a failed hook triggers nothing
	}
	for _, k := range in.Order {
		o := in.Steps[k]
		if o.hook {
			continue // hooks run once the runbook has ended
		}
		switch o.Status {
		case Pending, Waiting, Held, starting:
			in.skip(o, "")
		case Parked:
			o.Status = Cancelled
		}
	}
}

// settleRunbook ends the runbook once every step has: failed if a step
// failed under abort or isolate, escalated if one escalated, partial if
// failures were accepted or steps drafted, complete otherwise.
func (in *Interp) settleRunbook() {
	var failed, escalated, partial, accepted bool
	for _, k := range in.Order {
		s := in.Steps[k]
		if s.hook {
			continue
		}
		if !done(s.Status) {
			return
		}
		switch {
		case s.Status == Skipped && s.Reason == DraftOnly:
			partial = true
		case s.Status == Failed && s.Verb.Mode() == "continue":
			partial, accepted = true, true
		case s.Status == Failed:
			failed = true
		case s.Status == Escalated:
			escalated = true
		}
	}
	switch {
	case failed:
		in.Status = "failed"
		in.markUndo()
	case escalated:
		in.Status = "escalated"
	case partial:
		in.Status = "partial"
		if !accepted {
			in.skipHooks() // a draft is no failure
		}
	default:
		in.Status = "complete"
	}
}

// Input is one thing that happens to a runbook.
type Input struct {
	Kind InputKind
	Key  string
	// Value is a completion's result; OK says a call or a notification
	// succeeded, Approve a gate's decision.
	Value   any
	OK      bool
	Approve bool
	Action  string
	// Spend is what a returned call reports it spent; Compensate says a
	// cancel undoes the completed steps.
	Spend      float64
	Compensate bool
}

// InputKind names an input.
type InputKind string

// The inputs.
const (
	CallReturned InputKind = "call"    // a running sync step's call returned (OK, Value) or failed
	CallParked   InputKind = "park"    // a running durable step's call started its work
	Notified     InputKind = "notify"  // a parked step's notification (OK, Value)
	TimePasses   InputKind = "timeout" // two hours pass: every park times out
	Decided      InputKind = "decide"  // a person decides a gate (Approve)
	Resolved     InputKind = "resolve" // a person resolves an escalated step (Action, Value)
	Retried      InputKind = "retry"   // rbd retry
	Executed     InputKind = "execute" // rbd retry --execute of a draft
	Crashed      InputKind = "crash"   // the worker dies; its calls' leases expire
	Raised       InputKind = "raise"   // an admin raises the runbook budget by two dollars
	UndoReturned InputKind = "undo"    // a running compensation's call returned (OK) or failed
	Cancel       InputKind = "cancel"  // rbd cancel, with compensations unless Compensate is false
)

func (i Input) String() string {
	b, _ := json.Marshal(i.Value)
	return fmt.Sprintf("%s %s ok=%v approve=%v action=%s value=%s spend=%v", i.Kind, i.Key, i.OK, i.Approve, i.Action, b, i.Spend)
}

// Apply applies an input and settles. It reports false when the input
// is refused (the machine answers 409 then).
func (in *Interp) Apply(i Input) bool {
	s := in.Steps[i.Key]
	switch i.Kind {
	case CallReturned:
		s.out = false
		if i.OK { // spent, whatever became of its step
			in.Spent += i.Spend
			if s.Verb == Paid {
				in.Over += max(i.Spend-PaidCost, 0)
			}
		}
		if s.Status != Running {
			break // late: a cancelled step's call, recorded and ignored
		}
		if i.OK {
			in.complete(s, i.Value)
		} else {
			in.fail(s)
		}
	case CallParked:
		s.out = false
		if s.Status != Running || !s.Verb.Durable() {
			break // late, as above
		}
		if in.aborted() {
			s.Status = Cancelled
		} else {
			s.Status = Parked
		}
	case Notified:
		if s.Status != Parked {
			return false
		}
		if i.OK {
			in.complete(s, i.Value)
		} else {
			in.fail(s)
		}
	case TimePasses:
		for _, k := range in.Order {
			o := in.Steps[k]
			if o.Status != Parked {
				continue
			}
			if o.Verb == Esc {
				o.Status = Escalated
			} else {
				in.fail(o)
			}
		}
	case Decided:
		if s.Status != Waiting {
			return false
		}
		if i.Approve {
			s.approved = true
			in.start(s) // an approved step starts under the budget as any other
		} else {
			in.fail(s)
		}
	case Resolved:
		if s.Status != Escalated && s.Status != InDoubt || in.Status != "executing" && in.Status != "escalated" {
			return false
		}
		in.Status = "executing"
		switch i.Action {
		case "complete":
			in.complete(s, i.Value)
			in.reset(in.blockedAfter(map[string]bool{s.Key: true}), s.Key)
		case "retry":
			s.Status = Pending
			in.reset(in.blockedAfter(map[string]bool{s.Key: true}), s.Key)
		case "fail":
			in.fail(s)
		}
	case Retried:
		pick := map[string]bool{}
		switch {
		case in.Status != "failed" && in.Status != "partial" && in.Status != "escalated":
			return false
		case in.hooking() || in.undone():
			return false // its hooks run, or it was undone: regenerate it
		case in.Draft:
			for _, k := range in.Order {
				if s := in.Steps[k]; blocks(s) && s.Reason != DraftOnly && !in.afterDraft(s) && !s.hook {
					pick[k] = true
				}
			}
			pick = in.blockedAfter(pick)
		default:
			for _, k := range in.Order {
				if s := in.Steps[k]; blocks(s) && !s.hook {
					pick[k] = true
				}
			}
		}
		if len(pick) == 0 {
			return false
		}
		in.reset(in.reopenLists(pick), "")
		in.rearmHooks()
		in.Status, in.Finished = "executing", false
	case Executed:
		if !in.Draft || in.Status == "executing" || in.Status == "cancelled" || in.hooking() || in.undone() {
			return false
		}
		pick := map[string]bool{}
		for _, k := range in.Order {
			if s := in.Steps[k]; s.Status == Skipped && s.Reason == DraftOnly {
				pick[k] = true
			}
		}
		pick = in.blockedAfter(pick)
		if len(pick) == 0 {
			return false
		}
		in.reset(in.reopenLists(pick), "")
		in.rearmHooks()
		in.Draft, in.Status, in.Finished = false, "executing", false
	case UndoReturned:
		if s.Comp != Running {
			return false
		}
		if i.OK {
			s.Comp = Complete
		} else {
			s.Comp = Failed // recorded, never dropped; the others still run
		}
	case Cancel:
		switch in.Status {
		case "cancelled": // a no-op
		case "executing", "escalated":
			for _, k := range in.Order {
				if o := in.Steps[k]; !o.hook && !done(o.Status) {
					o.Status = Cancelled
				}
			}
			in.Status = "cancelled"
			if i.Compensate {
				in.markUndo()
			}
		default:
			return false
		}
	case Raised:
		if in.Cap <= 0 {
			return false
		}
		in.Cap += 2
	case Crashed:
		// A call out is made again with the same key; after an abort,
		// nothing is left for it to do. A call to a provider that ignores
		// keys is not made again, abort or not: the effect may have
		// happened, and only a person can say (in doubt).
		aborted := in.aborted()
		for _, k := range in.Order {
			switch o := in.Steps[k]; {
			case o.Status != Running:
				o.out = false // a cancelled step's call: its lease's end gives back its reservation
			case o.Verb == Doubt:
				o.Status, o.out = InDoubt, false
				in.Seen["call in doubt"]++
			case aborted && !o.hook: // a hook runs after the abort, by design
				o.Status, o.out = Cancelled, false
			}
		}
	}
	in.Settle()
	return true
}

// blockedAfter adds to pick the skipped and cancelled steps downstream of
// it, templates made from a picked instance among them.
func (in *Interp) blockedAfter(pick map[string]bool) map[string]bool {
	for added := true; added; {
		added = false
		for _, k := range in.Order {
			s := in.Steps[k]
			if pick[k] || s.Status != Skipped && s.Status != Cancelled {
				continue
			}
			from := append(slices.Clone(s.preds), s.after...)
			if in.isTemplate(s) {
				if s.template == "" { // a loop's templates expand together
					for _, t := range in.templatesOf(in.rb.outerOf(s.Key)) {
						from = append(from, t.Key)
					}
				}
				for i := range in.instances(s.Key) {
					from = append(from, in.members(s, i)...)
				}
			}
			for _, p := range from {
				if pick[p] {
					pick[k], added = true, true
					break
				}
			}
		}
	}
	return pick
}

// afterDraft reports whether a skipped step has a predecessor skipped
// DRAFT_ONLY: --execute runs it, not a retry of the draft's failures.
func (in *Interp) afterDraft(s *S) bool {
	if s.Status != Skipped {
		return false
	}
	for _, k := range append(slices.Clone(s.preds), s.after...) {
		if p := in.Steps[k]; p.Status == Skipped && p.Reason == DraftOnly {
			return true
		}
	}
	return false
}

// reopenLists adds to a retry's pick the templates of the instances it
// picked, and what their lists kept from running.
func (in *Interp) reopenLists(pick map[string]bool) map[string]bool {
	more := false
	for added := true; added; { // an inner list's instance, its template, and that one's
		added = false
		for _, k := range in.Order {
			if s := in.Steps[k]; pick[k] && s.template != "" && !pick[s.template] {
				pick[s.template], more, added = true, true, true
			}
		}
	}
	if more {
		pick = in.blockedAfter(pick)
	}
	return pick
}

// reset makes the picked steps pending again, but except.
func (in *Interp) reset(pick map[string]bool, except string) {
	for k := range pick {
		if k == except {
			continue
		}
		s := in.Steps[k]
		s.Status, s.Reason, s.Value, s.Code = Pending, "", nil, "" // an approval given stays; a rejection asks again
	}
}
