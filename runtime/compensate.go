package runtime

import (
	"encoding/json"
	"strings"

	"github.com/runbookdev/runbook/durable"
	"github.com/runbookdev/runbook/runtime/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// scheduleCompensations marks, when the runbook fails, every completed step
// whose verb declares a compensation as waiting to be undone; most are not
// loaded, so they are marked by key (simulated steps, which did nothing,
// are left alone). It reports whether any were.
func (t *transition) scheduleCompensations() bool {
	for _, ps := range t.plan.plan.Steps {
		if ps.Execution.Compensation == nil {
			continue
		}
		if s := t.byKey[ps.Key]; s != nil && (s.Status != StepComplete || s.Simulated) {
			continue
		}
		t.compensate = append(t.compensate, ps.Key)
	}
	return len(t.compensate) > 0
}

// compensationsLeft reports whether any compensation is still to run.
func (t *transition) compensationsLeft() bool {
	for _, s := range t.steps {
		if s.CompensationStatus == compensationPending || s.CompensationStatus == compensationRunning {
			return true
		}
	}
	return false
}

// nextCompensation is the step to undo next: the last completed of those
// waiting, one at a time, so that undoing runs in reverse order of
// completion.
func (t *transition) nextCompensation() *durable.Step {
	var next *durable.Step
	for _, s := range t.steps {
		switch s.CompensationStatus {
		case compensationRunning:
			return nil // one at a time
		case compensationPending:
			if next == nil || seq(s) > seq(next) {
				next = s
			}
		}
	}
	return next
}

func seq(s *durable.Step) int64 {
	if s.CompletionSeq == nil {
		return 0
	}
	return *s.CompletionSeq
}

// prepareCompensation resolves the next compensation's arguments from the
// step's arguments and result. It returns nil when there is nothing to run
// now.
func (t *transition) prepareCompensation() *prepared {
	if t.rb.Status != RunbookFailed {
		return nil
	}
	for {
		s := t.nextCompensation()
		if s == nil {
			if !t.compensationsLeft() && t.rb.FinishedAt == nil {
				t.runbookChange().Finished = true
			}
			return nil
		}
		comp := t.execution(s).Compensation
		exec, ok := t.plan.execution(comp.Verb)
		if !ok {
			t.failCompensation(s, Errorf(CodeInternal, "the plan has no execution block for %s", comp.Verb))
			continue
		}
		args, err := t.compensationArgs(s, comp.Args)
		if err == nil {
			if info, ok := t.plan.plan.Verbs[comp.Verb]; ok && info.InputSchema != nil {
				if verr := info.InputSchema.Validate(args); verr != nil {
					err = Errorf(CodeSchemaValidationFailed, "compensation arguments do not match %s's input_schema: %v", comp.Verb, verr)
				}
			}
		}
		if err != nil {
			t.failCompensation(s, classify(err))
			continue
		}
		key := idempotencyKey(t.rb.ID, compensationKey(s.Key), comp.Verb,
			verbs.Idempotency{Scope: rbtype.ScopeRunbookStep}, args)
		return &prepared{step: s, args: args, exec: exec, receipt: durable.ReceiptKey{Handler: exec.Handler, IdempotencyKey: key}}
	}
}

// startCompensation runs a prepared compensation, or completes it from a
// stored receipt.
func (t *transition) startCompensation(p *prepared, receipts map[durable.ReceiptKey]durable.Receipt) {
	if p == nil {
		return
	}
	s := p.step
	comp := t.execution(s).Compensation
	s.CompensationStatus = compensationRunning
	t.touch(s)
	t.event(EventCompensationStarted, s, map[string]any{"verb": comp.Verb})
	if _, ok := receipts[p.receipt]; ok {
		t.applyCompensation(s, &outcome{compensation: true, stepID: s.ID})
		return
	}
	handler, ok := t.engine.handlers.lookup(p.exec.Handler)
	if !ok {
		t.failCompensation(s, Errorf(CodeDependencyUnavailable, "handler %q is not registered in this daemon", p.exec.Handler))
		return
	}
	call := &Call{
		RunbookID: t.rb.ID, StepKey: s.Key, Verb: comp.Verb, Attempt: s.Attempt, Args: p.args,
		Params: p.exec.Params, IdempotencyKey: p.receipt.IdempotencyKey, Execution: p.exec,
	}
	t.lease(s, call, handler, p.exec.Timeouts.RunTimeout.D, false, true)
}

// applyCompensation records a compensation's outcome. A failed one is
// recorded, never dropped, and the others still run.
func (t *transition) applyCompensation(s *durable.Step, o *outcome) {
	if s.CompensationStatus != compensationRunning {
		return
	}
	if o.err != nil {
		t.failCompensation(s, o.err)
		return
	}
	if len(o.value) > 0 {
		comp := t.execution(s).Compensation
		exec, _ := t.plan.execution(comp.Verb)
		t.receipts = append(t.receipts, durable.Receipt{
			Handler: exec.Handler, IdempotencyKey: o.idemKey, RunbookID: t.rb.ID,
			StepKey: s.Key + ":compensate", Result: o.value, ResultHash: hashJSON(o.value),
		})
	}
	s.CompensationStatus, s.CompensationError = compensationComplete, ""
	t.touch(s)
	t.event(EventCompensationSucceeded, s, nil)
}

func (t *transition) failCompensation(s *durable.Step, e *Error) {
	s.CompensationStatus, s.CompensationError = compensationFailed, e.Code+": "+e.Message
	t.touch(s)
	t.event(EventCompensationFailed, s, map[string]any{"code": e.Code, "message": e.Message})
}

// compensationArgs fills a compensation's args: "@args.<path>" from the
// step's resolved arguments, "@result.<path>" from its result, anything
// else as written.
func (t *transition) compensationArgs(s *durable.Step, spec map[string]any) (map[string]any, error) {
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
