package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/runtime/driver"
	"github.com/runbookdev/runbook/runtime/rbtype"
)

// The actions that resolve an escalated step (SEMANTICS.md section 8).
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
}

// StepResolvedData is the data of STEP_RESOLVED and the payload of its
// mutation.
type StepResolvedData struct {
	Action string `json:"action"`
	By     string `json:"by,omitempty"`
}

// Resolve settles an escalated step as a person decided: complete with a
// result, retry, or fail. The steps its escalation skipped run again
// (complete, retry), and the runbook, if the escalation had ended it,
// runs again until it settles anew.
func (e *Engine) Resolve(ctx context.Context, runbookID uuid.UUID, stepKey string, r Resolution) error {
	return e.locked(ctx, runbookID, func(tx driver.Tx, rb *driver.Runbook, steps []*driver.Step) error {
		plan, err := e.planOf(rb)
		if err != nil {
			return err
		}
		c, err := resolveStep(time.Now(), e.workerID, rb, plan, steps, stepKey, r)
		if err != nil {
			return err
		}
		return tx.ApplyChange(ctx, c)
	})
}

// resolveStep is the change a resolution makes.
func resolveStep(now time.Time, worker string, rb *driver.Runbook, plan *planInfo, steps []*driver.Step, key string, r Resolution) (driver.Change, error) {
	var s *driver.Step
	for _, st := range steps {
		if st.Key == key {
			s = st
		}
	}
	switch {
	case s == nil:
		return driver.Change{}, fmt.Errorf("%w: runbook %s has no step %q", ErrNotFound, rb.ID, key)
	case s.Status != rbtype.StepEscalated:
		return driver.Change{}, fmt.Errorf("%w: step %q is %s, not escalated", ErrConflict, key, s.Status)
	case !rb.Status.Running() && rb.Status != rbtype.RunbookEscalated:
		return driver.Change{}, fmt.Errorf("%w: runbook %s is %s", ErrConflict, rb.ID, rb.Status)
	}
	pick := map[string]bool{}
	switch r.Action {
	case ResolveComplete:
		result := r.Result
		if len(result) == 0 || string(result) == "null" {
			result = json.RawMessage(`{}`)
		}
		if info, ok := plan.plan.Verbs[s.Verb]; ok && info.OutputSchema != nil {
			v, err := decodeJSON(result)
			if err != nil {
				return driver.Change{}, fmt.Errorf("%w: result: %v", ErrInvalid, err)
			}
			if err := info.OutputSchema.Validate(v); err != nil {
				return driver.Change{}, fmt.Errorf("%w: the result does not match %s's output_schema: %v", ErrInvalid, s.Verb, err)
			}
		}
		s.Status, s.Result, s.FinishedAt = rbtype.StepComplete, result, &now
		s.ErrorCode, s.ErrorMessage = "", ""
		addBlockedAfter(plan, steps, s.Key, pick)
	case ResolveRetry:
		resetToPending(s)
		addBlockedAfter(plan, steps, s.Key, pick)
	case ResolveFail:
		s.Status, s.FinishedAt = rbtype.StepFailed, &now
		s.ErrorCode, s.ErrorMessage = rbtype.CodeResolvedFailed, "failed by "+r.By
	default:
		return driver.Change{}, fmt.Errorf("%w: action %q must be %q, %q or %q", ErrInvalid, r.Action, ResolveComplete, ResolveRetry, ResolveFail)
	}
	c := driver.Change{RunbookID: rb.ID, Wake: true}
	change := s.Change()
	change.Completed = s.Status == rbtype.StepComplete
	c.Steps = append(c.Steps, change)
	for _, o := range steps {
		if pick[o.Key] {
			resetToPending(o)
			c.Steps = append(c.Steps, o.Change())
		}
	}
	data := StepResolvedData{Action: r.Action, By: r.By}
	payload, err := json.Marshal(data)
	if err != nil {
		return driver.Change{}, err
	}
	type event struct {
		typ  rbtype.EventType
		data any
	}
	events := []event{{rbtype.EventStepResolved, data}}
	switch r.Action {
	case ResolveComplete:
		events = append(events, event{rbtype.EventStepSucceeded, nil})
	case ResolveFail:
		events = append(events, event{rbtype.EventStepFailed, StepFailedData{Code: s.ErrorCode, Message: s.ErrorMessage}})
	}
	for _, ev := range events {
		e, err := newEvent(rb.ID, ev.typ, worker, s, ev.data)
		if err != nil {
			return driver.Change{}, err
		}
		c.Events = append(c.Events, e)
	}
	c.Mutations = []driver.Mutation{{RunbookID: rb.ID, Actor: r.By, Kind: rbtype.MutationResolve, Payload: payload}}
	if rb.Status == rbtype.RunbookEscalated {
		// The escalation had ended the runbook: it runs until it settles
		// anew, as the resolution leaves it.
		status, code, msg := rbtype.RunbookExecuting, rbtype.ErrorCode(""), ""
		c.Runbook = &driver.RunbookChange{ID: rb.ID, Status: &status, ErrorCode: &code, ErrorMessage: &msg, Reopen: true}
	}
	return c, nil
}

// addBlockedAfter adds to pick the skipped and cancelled steps downstream
// of one step.
func addBlockedAfter(plan *planInfo, steps []*driver.Step, key string, pick map[string]bool) {
	pick[key] = true
	addBlockedDescendants(plan, steps, pick)
	delete(pick, key)
}
