package runtime

import (
	"encoding/json"
	"strings"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// scheduleCompensations marks, when the runbook fails or is cancelled (unless
// the cancel says not to), every completed step
// whose verb declares a compensation as waiting to be undone; most are not
// loaded, so they are marked by key (simulated steps, which did nothing,
// are left alone). It reports whether any were.
func (t *transition) scheduleCompensations() bool {
	for _, ps := range t.plan.plan.Steps {
		if ps.Execution.Compensation == nil || ps.Loop != "" || ps.Kind == compiler.KindHook {
			continue // a template did nothing itself (its instances are undone); a hook runs after
		}
		if s := t.byKey[ps.Key]; s != nil && (s.Status != rbtype.StepComplete || s.Simulated) {
			continue
		}
		t.compensate = append(t.compensate, ps.Key)
	}
	return len(t.compensate) > 0
}

// compensationsLeft reports whether any compensation is still to run.
func (t *transition) compensationsLeft() bool {
	for _, s := range t.steps {
		if s.CompensationStatus == rbtype.CompensationPending || s.CompensationStatus == rbtype.CompensationRunning {
			return true
		}
	}
	return false
}

// nextCompensation is the step to undo next: the last completed of those
// waiting, one at a time, so that undoing runs in reverse order of
// completion.
func (t *transition) nextCompensation() *driver.Step {
	var next *driver.Step
	for _, s := range t.steps {
		switch s.CompensationStatus {
		case rbtype.CompensationRunning:
			return nil // one at a time
		case rbtype.CompensationPending:
			if next == nil || seq(s) > seq(next) {
				next = s
			}
		}
	}
	return next
}

func seq(s *driver.Step) int64 {
	if s.CompletionSeq == nil {
		return 0
	}
	return *s.CompletionSeq
}

// prepareCompensation resolves the next compensation's arguments from the
// step's arguments and result. It returns nil when there is nothing to run
// now.
func (t *transition) prepareCompensation() *prepared {
	if !t.rb.Status.Compensates() {
		return nil
	}
	for {
		s := t.nextCompensation()
		if s == nil {
			// Finished once none is left, but not in the round that
			// marked them (by key, in the write): they are still to run;
			// nor while failure hooks have yet to run after them.
			if !t.compensationsLeft() && len(t.compensate) == 0 && t.rb.FinishedAt == nil && !t.hooksLeft() {
				t.runbookChange().Finished = true
			}
			return nil
		}
		comp := t.execution(s).Compensation
		if exec, ok := t.plan.execution(comp.Verb); ok && t.draftSkips(exec.SideEffects) {
			t.skipCompensation(s, comp.Verb)
			continue
		}
		p, err := t.prepareVerbCall(s, comp, "compensation", compensationKey(s.Key))
		if err != nil {
			t.failCompensation(s, err)
			continue
		}
		return p
	}
}

// prepareVerbCall resolves a compensation's or an escalation's arguments
// from the step's own (what is "@args" and "@result"), checks them against
// its verb's input_schema, and derives its key from keyStep, a step key of
// its own. The error says why it cannot run.
func (t *transition) prepareVerbCall(s *driver.Step, call *verbs.Compensation, what, keyStep string) (*prepared, *Error) {
	exec, ok := t.plan.execution(call.Verb)
	if !ok {
		return nil, Errorf(rbtype.CodeInternal, "the plan has no execution block for %s", call.Verb)
	}
	args, err := t.compensationArgs(s, call.Args)
	if err != nil {
		return nil, handler.Classify(err)
	}
	if info, ok := t.plan.plan.Verbs[call.Verb]; ok && info.InputSchema != nil {
		if verr := info.InputSchema.Validate(args); verr != nil {
			return nil, Errorf(rbtype.CodeSchemaValidationFailed, "%s arguments do not match %s's input_schema: %v", what, call.Verb, verr)
		}
	}
	key := idempotencyKey(originOf(t.rb, &exec), keyStep, call.Verb, verbs.Idempotency{Scope: rbtype.ScopeRunbookStep}, args)
	return &prepared{step: s, args: args, exec: exec, receipt: driver.ReceiptKey{Handler: exec.Handler, IdempotencyKey: key}}, nil
}

// startCompensation runs a prepared compensation, or completes it from a
// stored receipt.
func (t *transition) startCompensation(p *prepared, receipts map[driver.ReceiptKey]driver.Receipt) {
	if p == nil {
		return
	}
	s := p.step
	comp := t.execution(s).Compensation
	s.CompensationStatus = rbtype.CompensationRunning
	t.touch(s)
	t.event(rbtype.EventCompensationStarted, s, CompensationStartedData{Verb: comp.Verb})
	if _, ok := receipts[p.receipt]; ok {
		t.applyCompensation(s, &outcome{purpose: callCompensation, stepID: s.ID})
		return
	}
	handler, ok := t.m.handler(p.exec.Handler)
	if !ok {
		t.failCompensation(s, Errorf(rbtype.CodeDependencyUnavailable, "handler %q is not registered in this daemon", p.exec.Handler))
		return
	}
	call := &Call{
		RunbookID: t.rb.ID, StepKey: s.Key, Verb: comp.Verb, Attempt: s.Attempt, Args: p.args,
		Params: p.exec.Params, IdempotencyKey: p.receipt.IdempotencyKey, Execution: p.exec,
	}
	t.lease(s, call, handler, p.exec.Timeouts.RunTimeout.D, false, callCompensation)
}

// applyCompensation records a compensation's outcome. A failed one is
// recorded, never dropped, and the others still run.
func (t *transition) applyCompensation(s *driver.Step, o *outcome) {
	if s.CompensationStatus != rbtype.CompensationRunning {
		return
	}
	if o.err != nil {
		t.failCompensation(s, o.err)
		return
	}
	if len(o.value) > 0 {
		comp := t.execution(s).Compensation
		exec, _ := t.plan.execution(comp.Verb)
		t.receipts = append(t.receipts, driver.Receipt{
			Handler: exec.Handler, IdempotencyKey: o.idemKey, RunbookID: t.rb.ID, Scope: rbtype.ScopeRunbookStep,
			StepKey: s.Key + ":compensate", Result: o.value, ResultHash: hashJSON(o.value),
		})
	}
	s.CompensationStatus, s.CompensationError = rbtype.CompensationComplete, ""
	t.touch(s)
	t.event(rbtype.EventCompensationSucceeded, s, nil)
}

func (t *transition) failCompensation(s *driver.Step, e *Error) {
	s.CompensationStatus, s.CompensationError = rbtype.CompensationFailed, string(e.Code)+": "+e.Message
	t.touch(s)
	t.event(rbtype.EventCompensationFailed, s, StepFailedData{Code: e.Code, Message: e.Message})
}

// compensationArgs fills a compensation's args: "@args.<path>" from the
// step's resolved arguments, "@result.<path>" from its result, anything
// else as written.
func (t *transition) compensationArgs(s *driver.Step, spec map[string]any) (map[string]any, error) {
	b := &binder{results: map[string]json.RawMessage{"args": s.ResolvedArgs, "result": s.Result}}
	out := make(map[string]any, len(spec))
	for name, v := range spec {
		ref, ok := v.(string)
		if !ok || !strings.HasPrefix(ref, "@") {
			out[name] = v
			continue
		}
		val, err := b.ref(ref[1:])
		if err != nil {
			return nil, err
		}
		out[name] = val
	}
	return out, nil
}
