package machine

import (
	"time"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// Inline steps (docs/runtime.md). A step whose call can neither touch the world
// nor take time need not be leased, committed, called and recorded in a
// second transaction: it is called inside the advance that starts it, and
// its outcome recorded there, with the same events (STEP_STARTED,
// STEP_SUCCEEDED), ledger row, attempt id and span as a leased call's.
// Nothing about it can be lost or repeated: if the transaction does not
// commit, neither did the call, which had no effect to repeat.
//
// Only a built-in handler that says so runs inline (core.echo), and only
// for a verb that says its step is pure and has no side effects, so an
// operator opts a verb in by declaring what is true of it:
//
//	execution: {kind: sync, handler: core.echo, side_effects: none, determinism: pure}
//
// A verb that caches its results, or is rehearsed (levels full and
// guarded), takes the leased path, where those are done.

// inlineDepth bounds how many times one advance goes round starting the
// inline steps that the inline steps before them readied: a chain of pure
// steps finishes in one transaction, up to this length, and the rest
// starts in the next.
const inlineDepth = 64

// runsInline reports whether a prepared step, about to start with h, runs
// inside this transaction.
func (t *transition) runsInline(p *prepared, h handler.Handler, dryRun bool) bool {
	if in, ok := h.(handler.Inliner); !ok || !in.RunsInline() || t.m.Inline == nil || dryRun {
		return false
	}
	e := p.exec
	return e.Kind == rbtype.KindSync && e.SideEffects == rbtype.SideEffectsNone && e.Determinism == rbtype.DeterminismPure &&
		p.cacheKey == "" && t.rehearsalFor(p, false) == nil
}

// callInline calls a started step's handler here and records what it
// returned, as the advance that takes a leased call's outcome would.
func (t *transition) callInline(s *rbtype.Step, call *handler.Call, h handler.Handler, timeout time.Duration) {
	call.AttemptID = AttemptID(t.Rb.ID, s.Key, s.Attempt)
	pc := &PendingCall{RunbookID: t.Rb.ID, StepID: s.ID, Attempt: s.Attempt, Handler: h, Call: call,
		Timeout: timeout, Purpose: callStep, Span: t.runbookTrace().AttemptSpan(call.AttemptID)}
	t.started(s)
	t.inlined++
	o := t.m.Inline(pc)
	t.release(s) // its attempt ends with its outcome, as a leased call's does (budget_reserve.go)
	t.applyOutcome(o)
}

// prepareReadied prepares, for another go round in this transaction, the
// steps that inline calls readied, when they can start without a read:
// their predecessors' results are in hand (completed in this transaction,
// or fetched for it), they have no effect whose receipt would have to be
// looked up first (receipt_lookup.go) and their verbs do not cache. start
// then calls them inline or leases them. The others are left as they are,
// ready for the next transaction, which reads what they need.
func (t *transition) prepareReadied() []*prepared {
	return t.prepareWhere(func(s *rbtype.Step) bool {
		exec := t.execution(s)
		return !looksUpReceipt(&exec) && !exec.Cache.Reuses() && t.inputsInHand(s)
	})
}

// inputsInHand reports whether every predecessor's result is in hand.
func (t *transition) inputsInHand(s *rbtype.Step) bool {
	if t.isHookStep(s) && len(t.hookRefs(s)) > 0 {
		return false // what a hook reads is fetched by its references
	}
	for _, p := range t.plan.preds[s.Key] {
		if ps := t.byKey[p]; ps != nil && ps.Status == rbtype.StepComplete && ps.Result != nil {
			continue
		}
		if d, ok := t.data[p]; ok && d.Result != nil {
			continue
		}
		if t.settledWithoutResult(s, p) {
			continue // a status test's step that has no result to read
		}
		return false
	}
	return true
}
