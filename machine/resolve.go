package machine

import (
	"encoding/json"
	"fmt"

	"github.com/runbookdev/runbook/rbtype"
)

// The actions that resolve an escalated step (docs/design/semantics.md section 8).
const (
	// ResolveComplete completes the step with a result a person gives.
	ResolveComplete = "complete"
	// ResolveRetry runs the step again, as a new attempt (a durable step
	// parks again, under a new correlation key).
	ResolveRetry = "retry"
	// ResolveFail fails the step for good.
	ResolveFail = "fail"
)

// Resolution is what a person decided about an escalated step.
type Resolution struct {
	Action string
	// Result is the step's result, for ResolveComplete ({} when empty).
	Result json.RawMessage
	By     string
	// Note is the claimed "by" when the token's actor differs.
	Note string
}

// StepResolvedData is the data of STEP_RESOLVED and the payload of its
// mutation.
type StepResolvedData struct {
	Action string `json:"action"`
	By     string `json:"by,omitempty"`
	Note   string `json:"note,omitempty"`
}

// ResolveStep is a resolution of an escalated step, or of one in doubt
// (in_doubt.go): completed with a
// result, sent back to run again, or failed, with the steps its
// escalation left skipped downstream made pending again (complete,
// retry). A failure under on_failure: abort aborts the runbook as any
// failure does. A runbook the escalation had ended runs again, until it
// settles anew.
type ResolveStep struct {
	Step string
	R    Resolution
}

func (c *ResolveStep) apply(t *transition) error {
	s, err := t.stepByKey(c.Step)
	switch {
	case err != nil:
		return err
	case s.Status != rbtype.StepEscalated && s.Status != rbtype.StepInDoubt:
		return fmt.Errorf("%w: step %q is %s, not escalated or in_doubt", rbtype.ErrConflict, c.Step, s.Status)
	case !t.Rb.Status.Running() && t.Rb.Status != rbtype.RunbookEscalated:
		return fmt.Errorf("%w: runbook %s is %s", rbtype.ErrConflict, t.Rb.ID, t.Rb.Status)
	}
	if err := escalationRunning(s); err != nil {
		return err
	}
	var result json.RawMessage
	switch c.R.Action {
	case ResolveComplete:
		if result, err = t.resolvedResult(s, c.R.Result); err != nil {
			return err
		}
	case ResolveRetry, ResolveFail:
	default:
		return fmt.Errorf("%w: action %q must be %q, %q or %q", rbtype.ErrInvalid, c.R.Action, ResolveComplete, ResolveRetry, ResolveFail)
	}
	if t.Rb.Status == rbtype.RunbookEscalated {
		t.reopen(rbtype.RunbookExecuting)
	}
	t.mutate(rbtype.EventStepResolved, rbtype.MutationResolve, c.R.By, s, StepResolvedData{Action: c.R.Action, By: c.R.By, Note: c.R.Note})
	if s.Status == rbtype.StepInDoubt {
		t.resolveInDoubt(s, c.R.Action, result)
	}
	switch c.R.Action {
	case ResolveComplete:
		t.complete(s, result, false, StepSucceededData{})
		t.resetBlockedAfter(s.Key)
	case ResolveRetry:
		t.resetToPending(s)
		t.touch(s)
		t.resetBlockedAfter(s.Key)
	case ResolveFail:
		t.moveStep(s, rbtype.StepFailed)
		s.FinishedAt = &t.Now
		s.ErrorCode, s.ErrorMessage = rbtype.CodeResolvedFailed, "failed by "+c.R.By
		t.touch(s)
		t.event(rbtype.EventStepFailed, s, StepFailedData{Code: s.ErrorCode, Message: s.ErrorMessage})
		t.failed(s)
	}
	return nil
}

// resolvedResult is the result a person gave an escalated step ({} when
// none), checked against the verb's output_schema.
func (t *transition) resolvedResult(s *rbtype.Step, given json.RawMessage) (json.RawMessage, error) {
	if len(given) == 0 || string(given) == "null" {
		return json.RawMessage(`{}`), nil
	}
	if info, ok := t.plan.Plan.Verbs[s.Verb]; ok && info.OutputSchema != nil {
		v, err := rbtype.DecodeJSON(given)
		if err != nil {
			return nil, fmt.Errorf("%w: result: %v", rbtype.ErrInvalid, err)
		}
		if err := info.OutputSchema.Validate(v); err != nil {
			return nil, fmt.Errorf("%w: the result does not match %s's output_schema: %v", rbtype.ErrInvalid, s.Verb, err)
		}
	}
	return given, nil
}

// resetBlockedAfter makes pending again the skipped and cancelled steps
// downstream of one step: what its failure or escalation left behind.
func (t *transition) resetBlockedAfter(key string) {
	pick := map[string]bool{key: true}
	addBlockedDescendants(t.plan, t.Steps, pick)
	delete(pick, key)
	for _, o := range t.Steps {
		if pick[o.Key] {
			t.resetToPending(o)
			t.touch(o)
		}
	}
}
