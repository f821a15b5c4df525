package machine

import (
	"encoding/json"
	"strings"

	"github.com/runbookdev/runbook/compiler"
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
	for _, ps := range t.plan.Plan.Steps {
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
	for _, s := range t.Steps {
		if s.CompensationStatus == rbtype.CompensationPending || s.CompensationStatus == rbtype.CompensationRunning {
			return true
		}
	}
	return false
}

// nextCompensation is the step to undo next: the last completed of those
// waiting, one at a time, so that undoing runs in reverse order of
// completion.
func (t *transition) nextCompensation() *rbtype.Step {
	var next *rbtype.Step
	for _, s := range t.Steps {
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

func seq(s *rbtype.Step) int64 {
	if s.CompletionSeq == nil {
		return 0
	}
	return *s.CompletionSeq
}

// prepareCompensation resolves the next compensation's arguments from the
// step's arguments and result. It returns nil when there is nothing to run
// now.
func (t *transition) prepareCompensation() *prepared {
	if !t.Rb.Status.Compensates() {
		return nil
	}
	for {
		s := t.nextCompensation()
		if s == nil {
			// Finished once none is left, but not in the round that
			// marked them (by key, in the write): they are still to run;
			// nor while failure hooks have yet to run after them.
			if !t.compensationsLeft() && len(t.compensate) == 0 && t.Rb.FinishedAt == nil && !t.hooksLeft() {
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
// its verb's input_schema, and derives its key: for an escalation or a
// reminder (keyStep PurposeEscalate or PurposeRemind) from the called
// verb's own idempotency block (VerbCallKey), for a compensation from
// keyStep, a step key of its own. The error says why it cannot run.
func (t *transition) prepareVerbCall(s *rbtype.Step, call *verbs.Compensation, what, keyStep string) (*prepared, *handler.Error) {
	if refused := t.verbCallRefusal(call.Verb, what); refused != nil {
		return nil, refused
	}
	exec, ok := t.plan.execution(call.Verb)
	if !ok {
		return nil, handler.Errorf(rbtype.CodeInternal, "the plan has no execution block for %s", call.Verb)
	}
	args, err := t.compensationArgs(s, call.Args)
	if err != nil {
		return nil, handler.Classify(err)
	}
	if info, ok := t.plan.Plan.Verbs[call.Verb]; ok && info.InputSchema != nil {
		if verr := info.InputSchema.Validate(args); verr != nil {
			return nil, handler.Errorf(rbtype.CodeSchemaValidationFailed, "%s arguments do not match %s's input_schema: %v", what, call.Verb, verr)
		}
	}
	var key string
	switch keyStep {
	case PurposeEscalate, PurposeRemind:
		key = VerbCallKey(OriginOf(t.Rb, &exec), s.Key, keyStep, call.Verb, exec.Idempotency, args)
	default:
		key = IdempotencyKey(OriginOf(t.Rb, &exec), keyStep, call.Verb, verbs.Idempotency{Scope: rbtype.ScopeRunbookStep}, args)
	}
	return &prepared{step: s, args: args, exec: exec, receipt: rbtype.ReceiptKey{Handler: exec.Handler, IdempotencyKey: key}}, nil
}

// startCompensation runs a prepared compensation, or completes it from a
// stored receipt.
func (t *transition) startCompensation(p *prepared, receipts map[rbtype.ReceiptKey]rbtype.Receipt) {
	if p == nil {
		return
	}
	s := p.step
	comp := t.execution(s).Compensation
	s.CompensationStatus = rbtype.CompensationRunning
	t.touch(s)
	t.event(rbtype.EventCompensationStarted, s, CompensationStartedData{Verb: comp.Verb, OnBehalfOf: t.Rb.Actor})
	if _, ok := receipts[p.receipt]; ok {
		t.applyCompensation(s, &Outcome{Purpose: CallCompensation, StepID: s.ID})
		return
	}
	impl, ok := t.m.Handler(p.exec.Handler)
	if !ok {
		t.failCompensation(s, handler.Errorf(rbtype.CodeDependencyUnavailable, "handler %q is not registered in this daemon", p.exec.Handler))
		return
	}
	call := &handler.Call{
		RunbookID: t.Rb.ID, StepKey: s.Key, Verb: comp.Verb, Attempt: s.Attempt, Args: p.args,
		Params: p.exec.Params, IdempotencyKey: p.receipt.IdempotencyKey, Execution: p.exec,
	}
	t.lease(s, call, impl, p.exec.Timeouts.RunTimeout.D, false, CallCompensation)
}

// applyCompensation records a compensation's outcome. A failed one is
// recorded, never dropped, and the others still run.
func (t *transition) applyCompensation(s *rbtype.Step, o *Outcome) {
	if s.CompensationStatus != rbtype.CompensationRunning {
		return
	}
	if o.Err != nil {
		t.failCompensation(s, o.Err)
		return
	}
	if len(o.Value) > 0 {
		comp := t.execution(s).Compensation
		exec, _ := t.plan.execution(comp.Verb)
		t.receipts = append(t.receipts, rbtype.Receipt{
			Handler: exec.Handler, IdempotencyKey: o.IdemKey, RunbookID: t.Rb.ID, Scope: rbtype.ScopeRunbookStep,
			StepKey: s.Key + ":compensate", Result: o.Value, ResultHash: HashJSON(o.Value),
		})
	}
	s.CompensationStatus, s.CompensationError = rbtype.CompensationComplete, ""
	t.touch(s)
	t.event(rbtype.EventCompensationSucceeded, s, nil)
}

func (t *transition) failCompensation(s *rbtype.Step, e *handler.Error) {
	s.CompensationStatus, s.CompensationError = rbtype.CompensationFailed, string(e.Code)+": "+e.Message
	t.touch(s)
	t.event(rbtype.EventCompensationFailed, s, StepFailedData{Code: e.Code, Message: e.Message})
}

// compensationArgs fills a compensation's args: "@args.<path>" from the
// step's resolved arguments, "@result.<path>" from its result, anything
// else as written.
func (t *transition) compensationArgs(s *rbtype.Step, spec map[string]any) (map[string]any, error) {
	b := &Binder{Results: map[string]json.RawMessage{"args": s.ResolvedArgs, "result": s.Result}}
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
