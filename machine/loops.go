package machine

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// For-each at run time (docs/language.md, "The plan format"). A loop whose
// list is known only at run time is frozen with its step templates (steps
// whose Loop names it). A template never runs. Its loop is expanded inside
// the advance in which its list becomes known (the list's producer
// completes, or at once for an input), by compiler.Plan.Expand: the new
// steps, their edges and the grown plan are written by the round's one
// write, as an extension's are, with MAP_EXPANDED. Whether a loop is
// expanded is read from the rows and the stored plan (its templates have
// instances, or have ended), never from memory, so a crash cannot expand
// it twice. A template ends when all its instances have, with their
// results as a list in index order (null for one that did not complete);
// an empty list completes it with [] at once. :parallel N holds back the
// first step of an element while N elements of its loop are in flight.

// DefaultMaxFanout is how many elements a list known only at run time may
// hold when Config says nothing (rbd serve --max-fanout).
const DefaultMaxFanout = compiler.DefaultMaxFanout

// element is one element of one loop instance, what :parallel counts.
type element struct {
	loop  string
	index int
}

// indexLoops fills the plan's loop indexes: loops by key, how many
// instances each template has, the elements each step belongs to, and the
// templates inside each loop. A plan without loops pays nothing.
func (p *PlanInfo) indexLoops() {
	if len(p.Plan.Loops) == 0 {
		return
	}
	p.loops = make(map[string]*compiler.Loop, len(p.Plan.Loops))
	for _, l := range p.Plan.Loops {
		if l != nil {
			p.loops[l.Key] = l
		}
	}
	p.Instances, p.elements, p.members, p.inside = map[string]int{}, map[string][]element{}, map[element][]string{}, map[string][]string{}
	p.width = map[string]int{}
	for _, s := range p.Plan.Steps {
		if base, i, ok := instanceOf(s.Key); ok && p.IsTemplate(base) && i+1 > p.Instances[base] {
			p.Instances[base] = i + 1
		}
		if s.Loop != "" {
			for at, depth := s.Loop, 0; at != "" && depth <= lang.MaxForEachDepth; depth++ {
				p.inside[at] = append(p.inside[at], s.Key)
				l := p.loops[at]
				if l == nil {
					break
				}
				at = l.Within
			}
		}
	}
	for _, s := range p.Plan.Steps {
		for _, e := range p.elementsOf(s.Key, 0) {
			p.members[e] = append(p.members[e], s.Key)
			if e.index+1 > p.width[e.loop] {
				p.width[e.loop] = e.index + 1
			}
		}
	}
}

// elementsOf lists the loop elements a step belongs to, innermost first:
// an instance T[i] is element i of the outermost loop around T's loop
// (the one whose expansion made it), and belongs to whatever T belongs
// to.
func (p *PlanInfo) elementsOf(key string, depth int) []element {
	if e, ok := p.elements[key]; ok || depth > lang.MaxForEachDepth {
		return e
	}
	base, i, ok := instanceOf(key)
	var out []element
	if ok && p.IsTemplate(base) {
		out = append([]element{{loop: p.topLoop(p.Steps[base].Loop), index: i}}, p.elementsOf(base, depth+1)...)
	}
	p.elements[key] = out
	return out
}

// topLoop is the loop at the top of key's chain of enclosing loops.
func (p *PlanInfo) topLoop(key string) string {
	for range lang.MaxForEachDepth + 1 {
		l := p.loops[key]
		if l == nil || l.Within == "" {
			return key
		}
		key = l.Within
	}
	return key
}

// instanceOf splits an instance's key "T[i]" into T and i.
func instanceOf(key string) (base string, i int, ok bool) {
	if !strings.HasSuffix(key, "]") {
		return "", 0, false
	}
	open := strings.LastIndexByte(key, '[')
	if open <= 0 {
		return "", 0, false
	}
	i, err := strconv.Atoi(key[open+1 : len(key)-1])
	if err != nil || i < 0 {
		return "", 0, false
	}
	return key[:open], i, true
}

// InstanceKey is the key of a template's instance i.
func InstanceKey(template string, i int) string { return template + "[" + strconv.Itoa(i) + "]" }

// producer is the step a loop's list is read from, "" for an input or a
// list written out: a reference's step, or the one a (filter ...) reads
// (compiler.ListProducer, docs/design/language.md v1.4).
func (p *PlanInfo) producer(l *compiler.Loop) string {
	key, ok := compiler.ListProducer(l.List, p.isKey)
	if !ok {
		return ""
	}
	return key
}

// statusOf is a step's status as this round knows it: a loaded step's
// own; a step of the stored plan that was not loaded has completed (only
// completed steps are left out); a step this round added (an expansion's,
// not stored yet) is pending.
func (t *transition) statusOf(key string) rbtype.StepStatus {
	if s := t.byKey[key]; s != nil {
		return s.Status
	}
	if t.plan.isKey(key) {
		return rbtype.StepComplete
	}
	return rbtype.StepPending
}

// resultOf is a completed step's result, when in hand: completed in this
// round, or fetched for it.
func (t *transition) resultOf(key string) (json.RawMessage, bool) {
	if s := t.byKey[key]; s != nil && s.Status == rbtype.StepComplete && s.Result != nil {
		return s.Result, true
	}
	if d, ok := t.data[key]; ok && d.Result != nil {
		return d.Result, true
	}
	return nil, false
}

// latest is the plan as this round has grown it: the stored plan, or the
// one its expansions made.
func (t *transition) latest() *PlanInfo {
	if t.Grown != nil {
		return t.Grown
	}
	return t.plan
}

// abortedTemplate is the template of a pending instance when that
// template was skipped by an abort: the instance was made in the round
// the runbook aborted (its list completed earlier in the round, the abort
// came as steps started, and the expansion was written after it), and an
// abort skips every step that has not started. A template ends otherwise
// only once its instances have, so a skipped template with a pending
// instance means this alone. "" for any other step.
func (t *transition) abortedTemplate(s *rbtype.Step) string {
	base, _, ok := instanceOf(s.Key)
	if !ok || !t.plan.IsTemplate(base) {
		return ""
	}
	if ts := t.byKey[base]; ts != nil && ts.Status == rbtype.StepSkipped && ts.ErrorCode == "" {
		return base
	}
	return ""
}

// unexpanded reports whether a top-level loop of p is still to expand:
// it has templates, none of them has instances, and all are pending (an
// empty list completes them; a producer that failed skips them).
func (t *transition) unexpanded(p *PlanInfo, l *compiler.Loop) bool {
	inside := p.inside[l.Key]
	if l.Within != "" || len(inside) == 0 {
		return false
	}
	for _, k := range inside {
		if p.Instances[k] > 0 || t.statusOf(k) != rbtype.StepPending {
			return false
		}
	}
	return true
}

// loopsDue lists the producers of unexpanded loops that have completed and
// whose results are not in hand: to be fetched, so the loops expand.
func (t *transition) loopsDue() []string {
	if !t.Rb.Status.Running() || len(t.plan.loops) == 0 || len(t.newSteps) > 0 {
		return nil
	}
	var want []string
	for _, l := range t.plan.Plan.Loops {
		if !t.unexpanded(t.plan, l) {
			continue
		}
		if p := t.plan.producer(l); p != "" && t.statusOf(p) == rbtype.StepComplete {
			if _, ok := t.resultOf(p); !ok {
				want = append(want, p)
			}
		}
	}
	return want
}

// listBinder resolves loop lists and instance results with what is in
// hand.
func (t *transition) listBinder(p *PlanInfo) *Binder {
	b := &Binder{Results: map[string]json.RawMessage{}, Inputs: t.inputs, IsKey: p.isKey}
	for key, d := range t.data {
		if d.Result != nil {
			b.Results[key] = d.Result
		}
	}
	for _, s := range t.Steps {
		if s.Status == rbtype.StepComplete && s.Result != nil {
			b.Results[s.Key] = s.Result
		}
	}
	return b
}

// expandLoops expands every top-level loop whose list is known, over and
// over, so that a loop an expansion made whose list is known already (a
// nested for-each over its element's field) expands in the same round. A
// list that is not an array, or longer than the daemon's --max-fanout,
// expands nothing: its templates fail (a producer that completes in this
// round fails itself instead, in complete). It reports whether a loop's
// list is known but could not be used yet.
func (t *transition) expandLoops() (later bool) {
	if !t.Rb.Status.Running() || len(t.plan.loops) == 0 || len(t.newSteps) > 0 || t.Runbook != nil && t.Runbook.Plan != nil {
		return false // an extension in this round grows the plan: the next round expands
	}
	if t.m.DeferExpansion {
		return t.deferExpansion()
	}
	for range 4 * (lang.MaxForEachDepth + 1) {
		p := t.latest()
		b := t.listBinder(p)
		progressed := false
		var due []dueLoop
		for _, l := range p.Plan.Loops {
			if !t.unexpanded(p, l) {
				continue
			}
			list, known, err := t.loopList(p, l, b)
			if !known {
				continue
			}
			stored := true
			for _, k := range p.inside[l.Key] {
				stored = stored && t.plan.isKey(k)
			}
			if !stored && (err != nil || len(list) == 0) {
				// Its templates' rows are written by this round: they are
				// failed or completed by the next, which finds the list again.
				later = true
				continue
			}
			if err != nil {
				t.failLoop(p, l, err)
				progressed = true
				continue
			}
			if len(list) == 0 {
				t.event(rbtype.EventMapExpanded, nil, MapExpandedData{Loop: l.Key, Count: 0})
				for _, k := range p.inside[l.Key] {
					if s := t.byKey[k]; s != nil {
						t.complete(s, json.RawMessage(`[]`), false, StepSucceededData{Instances: new(int)})
					}
				}
				progressed = true
				continue
			}
			due = append(due, dueLoop{loop: l, n: len(list)})
		}
		if len(due) > 0 && t.expandEach(p, due) { // expand_each.go: all at once
			progressed = true
		}
		if !progressed {
			break
		}
	}
	return later
}

// loopList resolves a top-level loop's list: known is false while its
// producer has not completed or its result is not in hand. A list that
// cannot be resolved, is not an array or is too long is known, with the
// error that fails it. A dry run's simulated producer has no real list:
// it expands to none.
func (t *transition) loopList(p *PlanInfo, l *compiler.Loop, b *Binder) (list []any, known bool, err *handler.Error) {
	producer := p.producer(l)
	if producer != "" {
		if t.statusOf(producer) != rbtype.StepComplete {
			return nil, false, nil
		}
		if _, ok := b.Results[producer]; !ok {
			return nil, false, nil
		}
	}
	if m, ok := l.List.(map[string]any); ok && len(m) == 1 && m[compiler.ItemKey] != nil {
		return nil, true, handler.Errorf(rbtype.CodeInternal, "loop %q reads a loop's element, and no loop is around it", l.Key)
	}
	if items, written := l.List.([]any); written {
		// A list written out (kept for its :parallel) is known as it
		// stands: its elements go into the instances unread, as markers
		// where they are, so one may name a step that has yet to run.
		return t.checkList(l, items)
	}
	v, rerr := b.Resolve(l.List)
	if s := t.byKey[producer]; producer != "" && s != nil && s.Simulated {
		if items, ok := v.([]any); ok && rerr == nil {
			return items, true, nil
		}
		return nil, true, nil
	}
	if rerr != nil {
		return nil, true, handler.Classify(rerr)
	}
	return t.checkList(l, v)
}

// checkList checks a resolved list: an array of at most --max-fanout
// elements.
func (t *transition) checkList(l *compiler.Loop, v any) ([]any, bool, *handler.Error) {
	items, ok := v.([]any)
	if !ok {
		return nil, true, handler.Errorf(rbtype.CodeSchemaValidationFailed, "the list of (for-each ... :as @%s) is %s, not a list", l.Item, KindOf(v))
	}
	if max := t.m.fanout(); len(items) > max {
		return nil, true, handler.Errorf(rbtype.CodeFanoutTooLarge, "the list of (for-each ... :as @%s) holds %d elements, more than %d (--max-fanout)", l.Item, len(items), max)
	}
	return items, true, nil
}

// checkProducedLists checks, as a step completes with result, the lists
// of the loops it produces: a list that is not an array, or is too long,
// fails the step instead (FANOUT_TOO_LARGE with the count, or
// SCHEMA_VALIDATION_FAILED), and nothing is expanded.
func (t *transition) checkProducedLists(s *rbtype.Step, result json.RawMessage) *handler.Error {
	if t.plan == nil || len(t.plan.loops) == 0 {
		return nil
	}
	p := t.latest()
	for _, l := range p.Plan.Loops {
		if p.producer(l) != s.Key || !t.unexpanded(p, l) {
			continue
		}
		b := &Binder{Results: map[string]json.RawMessage{s.Key: result}, Inputs: t.inputs, IsKey: p.isKey}
		v, err := b.Resolve(l.List)
		if err != nil {
			return handler.Classify(err)
		}
		if _, _, err := t.checkList(l, v); err != nil {
			return err
		}
		if err := t.admitExpansion(l, len(p.Plan.Steps)+len(v.([]any))*len(p.inside[l.Key])); err != nil {
			return err
		}
	}
	return nil
}

// failLoop fails the templates of a loop whose list cannot be expanded.
func (t *transition) failLoop(p *PlanInfo, l *compiler.Loop, err *handler.Error) {
	for _, k := range p.inside[l.Key] {
		if s := t.byKey[k]; s != nil && s.Status == rbtype.StepPending {
			t.failStep(s, err)
		}
	}
}

// admitExpansion checks that the runbook may hold total steps once the
// loop is expanded: the daemon's step limit (--max-steps, limits.go)
// counts expanded steps as it counts submitted and extending ones. Over
// it, the loop's list fails as one over --max-fanout does.
func (t *transition) admitExpansion(l *compiler.Loop, total int) *handler.Error {
	if err := CheckSteps(t.m.Limits, total); err != nil {
		return handler.Errorf(rbtype.CodeFanoutTooLarge, "expanding (for-each ... :as @%s) would make %d steps; --max-steps allows %d", l.Item, total, t.m.Limits.MaxSteps)
	}
	return nil
}

// grow writes what the round's expansions added: the new steps after the
// stored ones, their edges, and the grown plan under a new version, so
// that an extension compiled against the old plan is refused and compiles
// again.
func (t *transition) grow() {
	if t.Grown == nil {
		return
	}
	old, grown := t.plan.Plan, t.Grown.Plan
	added, err := NewSteps(grown.Steps[len(old.Steps):], len(old.Steps))
	if err != nil {
		if t.err == nil {
			t.err = err
		}
		return
	}
	t.inheritGates(added)
	t.newSteps, t.newEdges = added, EdgesOf(grown.Edges[len(old.Edges):], nil)
	rc := t.runbookChange()
	rc.Plan, rc.PlanHash, rc.Version, rc.Inputs = grown.JSON(), grown.PlanHash, t.Rb.Version+1, t.Rb.Inputs
	if len(rc.Inputs) == 0 {
		rc.Inputs = json.RawMessage(`{}`)
	}
}

// inheritGates gives each new instance the gate of its template's row:
// the policy's gates were frozen on the rows when the runbook was
// admitted (admit.go), and the template's row is the one that stood for
// its instances then; the plan's steps know only the verb's gate. An
// instance that is itself a template (a nested loop's) passes it on to
// its own instances, made later in the list or in a later round.
func (t *transition) inheritGates(added []rbtype.NewStep) {
	gated := map[string]bool{}
	for _, s := range t.Steps {
		if s.Gate == rbtype.GateHumanConfirm && t.plan.IsTemplate(s.Key) {
			gated[s.Key] = true
		}
	}
	if len(gated) == 0 {
		return
	}
	for i := range added {
		if base, _, ok := instanceOf(added[i].Key); ok && gated[base] {
			added[i].Gate = rbtype.GateHumanConfirm
			gated[added[i].Key] = true
		}
	}
}

// templatesDue lists the instance results the templates whose instances
// have all ended need and do not have in hand: to be fetched.
func (t *transition) templatesDue() []string {
	var want []string
	t.eachEndedTemplate(func(s *rbtype.Step, n int) {
		for i := range n {
			k := InstanceKey(s.Key, i)
			if t.statusOf(k) == rbtype.StepComplete {
				if _, ok := t.resultOf(k); !ok {
					want = append(want, k)
				}
			}
		}
	})
	return want
}

// eachEndedTemplate calls fn for every pending template with n instances
// that have all ended.
func (t *transition) eachEndedTemplate(fn func(s *rbtype.Step, n int)) {
	if len(t.plan.loops) == 0 || !t.Rb.Status.Running() {
		return
	}
	for _, s := range t.Steps {
		if s.Status != rbtype.StepPending || !t.plan.IsTemplate(s.Key) {
			continue
		}
		n := t.plan.Instances[s.Key]
		if n == 0 {
			continue
		}
		ended := true
		for i := 0; i < n && ended; i++ {
			ended = t.statusOf(InstanceKey(s.Key, i)).Done()
		}
		if ended {
			fn(s, n)
		}
	}
}

// endTemplates ends the templates whose instances have all ended: with
// the list of their results, null for an instance that did not complete;
// skipped while a step of an iteration is escalated or cancelled, which a
// person may yet change (whole_lists.go); a draft when an instance is. A template whose loop never
// expanded is skipped once its list's producer has ended without
// completing (unexpandedAfter). It reports whether a
// template waits for results not in hand.
func (t *transition) endTemplates() (later bool) {
	if len(t.plan.loops) == 0 || !t.Rb.Status.Running() {
		return false
	}
	for _, s := range t.Steps {
		if p := t.unexpandedAfter(s); p != "" {
			t.skipAfter(s, p)
		}
	}
	t.eachEndedTemplate(func(s *rbtype.Step, n int) {
		if held := t.heldIteration(s.Key); held != "" {
			t.skipAfter(s, held)
			return
		}
		var list []byte
		list = append(list, '[')
		for i := range n {
			if i > 0 {
				list = append(list, ',')
			}
			k := InstanceKey(s.Key, i)
			switch st := t.statusOf(k); st {
			case rbtype.StepComplete:
				r, ok := t.resultOf(k)
				if !ok {
					later = true
					return
				}
				list = append(list, r...)
			case rbtype.StepSkipped:
				if t.draftTaints(k) {
					t.skipDraft(s) // a list that holds a draft is a draft
					return
				}
				list = append(list, "null"...)
			default:
				list = append(list, "null"...)
			}
		}
		list = append(list, ']')
		count := n
		t.complete(s, list, false, StepSucceededData{Instances: &count})
	})
	return later
}

// unexpandedAfter is, for a template whose loop never expanded, its
// list's producer when that ended without completing (the template is
// then skipped after it); "" otherwise.
func (t *transition) unexpandedAfter(s *rbtype.Step) string {
	if s.Status != rbtype.StepPending || !t.plan.IsTemplate(s.Key) || t.plan.Instances[s.Key] > 0 {
		return ""
	}
	top := t.plan.loops[t.plan.topLoop(t.plan.Steps[s.Key].Loop)]
	if top == nil {
		return ""
	}
	if p := t.plan.producer(top); p != "" && t.statusOf(p).BlocksDependents() {
		return p
	}
	return ""
}

// inFlight is, for a loop with :parallel, the set of its elements in
// flight: one of their steps has started and one has not ended.
func (t *transition) inFlight(loop string) map[int]bool {
	if f, ok := t.flight[loop]; ok {
		return f
	}
	f := map[int]bool{}
	for i := range t.plan.width[loop] {
		started, active := false, false
		for _, k := range t.plan.members[element{loop: loop, index: i}] {
			st := t.statusOf(k)
			if st != rbtype.StepPending && !t.plan.IsTemplate(k) {
				started = true
			}
			if !st.Done() {
				active = true
			}
		}
		if started && active {
			f[i] = true
		}
	}
	if t.flight == nil {
		t.flight = map[string]map[int]bool{}
	}
	t.flight[loop] = f
	return f
}

// holdsBack reports whether :parallel keeps a step from becoming ready
// now: it is the first of its element to start, and as many elements of
// its loop as the loop allows are in flight. A step let through puts its
// elements in flight.
func (t *transition) holdsBack(s *rbtype.Step) bool {
	elems := t.plan.elements[s.Key]
	if len(elems) == 0 {
		return false
	}
	for _, e := range elems {
		l := t.plan.loops[e.loop]
		if l == nil || l.Parallel <= 0 {
			continue
		}
		if f := t.inFlight(e.loop); !f[e.index] && len(f) >= l.Parallel {
			return true
		}
	}
	for _, e := range elems {
		if l := t.plan.loops[e.loop]; l != nil && l.Parallel > 0 {
			t.inFlight(e.loop)[e.index] = true
		}
	}
	return false
}

// BeforeExpansion is a plan without what the runtime's expansions added:
// the instances of its templates (at every depth), the loops they made,
// and their edges. Expand appends them and changes nothing that was
// there, so this is the plan as it was submitted (and extended), hashed
// as it was. A plan with nothing expanded is returned as it is.
func BeforeExpansion(p *compiler.Plan) *compiler.Plan {
	if len(p.Loops) == 0 {
		return p
	}
	info := NewPlanInfo(p)
	var steps []*compiler.Step
	dropped := map[string]bool{}
	for _, s := range p.Steps {
		if base, _, ok := instanceOf(s.Key); ok && info.IsTemplate(base) {
			dropped[s.Key] = true
			continue
		}
		steps = append(steps, s)
	}
	if len(dropped) == 0 {
		return p
	}
	var loops []*compiler.Loop
	for _, l := range p.Loops {
		if base, _, ok := instanceOf(l.Key); ok && info.loops[base] != nil {
			continue
		}
		loops = append(loops, l)
	}
	var edges []compiler.Edge
	for _, e := range p.Edges {
		if !dropped[e.From] && !dropped[e.To] {
			edges = append(edges, e)
		}
	}
	out := &compiler.Plan{SchemaVersion: p.SchemaVersion, Sources: p.Sources, Inputs: p.Inputs, Steps: steps, Edges: edges,
		Loops: loops, Verbs: p.Verbs}
	if p.Effects != nil {
		out.Effects = compiler.Effects(out)
	}
	out.PlanHash = out.Hash()
	return out
}
