package refmodel

import (
	"fmt"
	"strings"
)

// Verb is one verb of the model's catalogue (Catalogue).
type Verb string

// The verbs: a sync step of each failure mode, two waits and a gate.
const (
	// Echo is sync, with no side effect, under abort.
	Echo Verb = "echo"
	// Cont reaches outside (external_call) under continue.
	Cont Verb = "cont"
	// Iso reaches outside under isolate.
	Iso Verb = "iso"
	// Wait parks for a person (human_process) for an hour, then fails,
	// under abort.
	Wait Verb = "wait"
	// Esc parks as Wait does and escalates at its timeout.
	Esc Verb = "esc"
	// Gate is sync, no side effect, behind a person's approval.
	Gate Verb = "gate"
	// Doubt reaches outside under isolate, through a provider that
	// ignores idempotency keys: a crash mid-call leaves it in doubt.
	Doubt Verb = "doubt"
	// Paid reaches outside under continue and declares a cost of one
	// dollar, which an attempt reserves as it starts.
	Paid Verb = "paid"
)

// Keep writes inside (internal_db, so a draft runs it) under abort, and
// is undone by Undo, which reaches outside, when its runbook fails or is
// cancelled.
const (
	Keep Verb = "keep"
	Undo Verb = "undo"
)

// PaidCost is what an attempt of Paid reserves.
const PaidCost = 1.0

// Catalogue is the verb file the model's runbooks compile against.
const Catalogue = `
- name: echo
  domain: mc
  execution: {kind: sync, handler: core.echo, side_effects: none}
- name: cont
  domain: mc
  execution: {kind: sync, handler: core.echo, side_effects: external_call, on_failure: continue}
- name: iso
  domain: mc
  execution: {kind: sync, handler: core.echo, side_effects: external_call, on_failure: isolate}
- name: wait
  domain: mc
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H}
- name: esc
  domain: mc
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: PT1H, on_timeout: escalate}
- name: gate
  domain: mc
  execution: {kind: sync, handler: core.echo, side_effects: none, gate: human_confirm}
- name: doubt
  domain: mc
  execution:
    kind: sync
    handler: core.echo
    side_effects: external_call
    on_failure: isolate
    idempotency: {provider_dedupes: false}
- name: keep
  domain: mc
  execution:
    kind: sync
    handler: core.echo
    side_effects: internal_db
    compensation: {verb: mc.undo, args: {what: "@args.n"}}
- name: undo
  domain: mc
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
- name: paid
  domain: mc
  cost: {usd: 1}
  execution: {kind: sync, handler: core.echo, side_effects: external_call, on_failure: continue}
`

// Durable reports whether the verb parks.
func (v Verb) Durable() bool { return v == Wait || v == Esc }

// Outside reports whether the verb reaches the outside world, which a
// draft_only runbook does not run.
func (v Verb) Outside() bool {
	return v == Cont || v == Iso || v == Wait || v == Esc || v == Doubt || v == Paid
}

// Mode is the verb's failure mode.
func (v Verb) Mode() string {
	switch v {
	case Cont, Paid:
		return "continue"
	case Iso, Doubt:
		return "isolate"
	}
	return "abort"
}

// Step is one step of a runbook, or a template in a loop's body.
type Step struct {
	Key  string
	Verb Verb
	// Reads are the steps whose result it reads: a step before it, a
	// template (the list), or in a body an earlier step of the body (its
	// own iteration's). Item reads the loop's element.
	Reads []string
	Item  bool
	// After are steps it runs after without reading them.
	After []string
	// When, if set, runs the step only when the value read is below
	// Below: the element's (WhenItem) or a step's "v".
	When *When
	// Produces marks a step whose result's "v" is a loop's list; Nested,
	// one whose list holds lists, for a loop with an inner loop.
	Produces, Nested bool
}

// When is a condition: (< ref N) on a step's "v" or the element, or a
// status test (= (status @ref) "Status"), negated (!=) when Not.
type When struct {
	Ref   string
	Item  bool
	Below int
	// Status, when set, makes the condition a status test of Ref, which
	// waits for Ref to settle and is not skipped by it.
	Status string
	Not    bool
}

// Loop is a for-each over a step's list, or (Inner) over its outer
// loop's element.
type Loop struct {
	Item     string
	Over     string
	Parallel int
	Body     []*Step
	// Inner, if set, is a for-each within the body, after its steps, over
	// the element (a list): its body's steps are templates too, whose
	// instances for element i are templates of the inner list's.
	Inner *Loop
}

// Runbook is a generated runbook: its steps and loops in order.
type Runbook struct {
	Items []Item
	Draft bool
	// Cap, when above zero, is the runbook's cost budget in dollars.
	Cap float64
	// Hooks are the calls of its (on-failure ...) form.
	Hooks []*Step
}

// Item is a step or a loop.
type Item struct {
	Step *Step
	Loop *Loop
}

// Source is the runbook in the language.
func (r *Runbook) Source() string {
	var b strings.Builder
	for _, it := range r.Items {
		if it.Step != nil {
			b.WriteString(it.Step.source("", r))
			b.WriteByte('\n')
			continue
		}
		l := it.Loop
		r.writeLoop(&b, l, "@"+l.Over+".v", "\n  ")
		if m := l.Inner; m != nil {
			b.WriteString("\n  ")
			r.writeLoop(&b, m, "@"+l.Item, "\n    ")
			b.WriteString(")")
		}
		b.WriteString(")\n")
	}
	if len(r.Hooks) > 0 {
		b.WriteString("(on-failure")
		for _, h := range r.Hooks {
			fmt.Fprintf(&b, "\n  (mc.%s :n %q :f @failure.code", h.Verb, h.Key)
			for i, k := range h.Reads {
				fmt.Fprintf(&b, " :r%d @%s.v", i, k)
			}
			fmt.Fprintf(&b, " :as @%s)", h.Key)
		}
		b.WriteString(")\n")
	}
	return b.String()
}

// writeLoop writes a for-each over list and its body's steps, each
// after indent, leaving the form open for an inner loop.
func (r *Runbook) writeLoop(b *strings.Builder, l *Loop, list, indent string) {
	fmt.Fprintf(b, "(for-each %s :as @%s", list, l.Item)
	if l.Parallel > 0 {
		fmt.Fprintf(b, " :parallel %d", l.Parallel)
	}
	for _, s := range l.Body {
		b.WriteString(indent)
		b.WriteString(s.source(l.Item, r))
	}
}

func (s *Step) source(item string, r *Runbook) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(mc.%s :n %q", s.Verb, s.Key)
	for i, k := range s.Reads {
		if r.isTemplate(k) && !r.sameIteration(k, s.Key) {
			fmt.Fprintf(&b, " :r%d @%s", i, k)
		} else {
			fmt.Fprintf(&b, " :r%d @%s.v", i, k)
		}
	}
	if s.Item {
		fmt.Fprintf(&b, " :e @%s", item)
	}
	for _, k := range s.After {
		fmt.Fprintf(&b, " :after @%s", k)
	}
	if w := s.When; w != nil {
		if w.Status != "" {
			op := "="
			if w.Not {
				op = "!="
			}
			fmt.Fprintf(&b, " :when (%s (status @%s) %q)", op, w.Ref, w.Status)
		} else if w.Item {
			fmt.Fprintf(&b, " :when (< @%s %d)", item, w.Below)
		} else {
			fmt.Fprintf(&b, " :when (< @%s.v %d)", w.Ref, w.Below)
		}
	}
	fmt.Fprintf(&b, " :as @%s)", s.Key)
	return b.String()
}

// isTemplate reports whether key is a step of a loop's body.
func (r *Runbook) isTemplate(key string) bool { return r.loopOf(key) != nil }

// loopOf is the loop whose body holds key (an inner loop for its own
// body's), or nil.
func (r *Runbook) loopOf(key string) *Loop {
	for _, it := range r.Items {
		for l := it.Loop; l != nil; l = l.Inner {
			for _, s := range l.Body {
				if s.Key == key {
					return l
				}
			}
		}
	}
	return nil
}

// outerOf is the top-level loop that holds key, at any depth, or nil.
func (r *Runbook) outerOf(key string) *Loop {
	for _, it := range r.Items {
		for l := it.Loop; l != nil; l = l.Inner {
			for _, s := range l.Body {
				if s.Key == key {
					return it.Loop
				}
			}
		}
	}
	return nil
}

// sameBody reports whether a and b are in one loop's body.
func (r *Runbook) sameBody(a, b string) bool {
	l := r.loopOf(a)
	return l != nil && l == r.loopOf(b)
}

// sameIteration reports whether b, in a loop's body or its inner loop's,
// reads a of its own iteration: a in the same body, or a in the outer
// body and b in the inner one.
func (r *Runbook) sameIteration(a, b string) bool {
	la, lb := r.loopOf(a), r.loopOf(b)
	return la != nil && lb != nil && (la == lb || la.Inner == lb)
}

// Steps lists every step and template in source order.
func (r *Runbook) Steps() []*Step {
	var out []*Step
	for _, it := range r.Items {
		if it.Step != nil {
			out = append(out, it.Step)
			continue
		}
		for l := it.Loop; l != nil; l = l.Inner {
			out = append(out, l.Body...)
		}
	}
	return out
}
