package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
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
	// note is the claimed "by" when the token's actor differs.
	note string
}

// StepResolvedData is the data of STEP_RESOLVED and the payload of its
// mutation.
type StepResolvedData struct {
	Action string `json:"action"`
	By     string `json:"by,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Resolve settles an escalated step as a person decided: complete with a
// result, retry, or fail. The steps its escalation skipped run again
// (complete, retry), and the runbook, if the escalation had ended it,
// runs again until it settles anew.
func (e *Engine) Resolve(ctx context.Context, runbookID uuid.UUID, stepKey string, r Resolution) error {
	r.By, r.note = actorOf(ctx, r.By)
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
		return driver.Change{}, noStep(rb.ID, key, steps)
	case s.Status != rbtype.StepEscalated:
		return driver.Change{}, fmt.Errorf("%w: step %q is %s, not escalated", ErrConflict, key, s.Status)
	case !rb.Status.Running() && rb.Status != rbtype.RunbookEscalated:
		return driver.Change{}, fmt.Errorf("%w: runbook %s is %s", ErrConflict, rb.ID, rb.Status)
	}
	if err := escalationRunning(s); err != nil {
		return driver.Change{}, err
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
	ev, m, err := logged(rb.ID, rbtype.EventStepResolved, rbtype.MutationResolve, worker, r.By, s,
		StepResolvedData{Action: r.Action, By: r.By, Note: r.note})
	if err != nil {
		return driver.Change{}, err
	}
	c.Events, c.Mutations = []driver.Event{ev}, []driver.Mutation{m}
	var outcome driver.Event
	switch r.Action {
	case ResolveComplete:
		outcome, err = newEvent(rb.ID, rbtype.EventStepSucceeded, worker, s, nil)
	case ResolveFail:
		outcome, err = newEvent(rb.ID, rbtype.EventStepFailed, worker, s, StepFailedData{Code: s.ErrorCode, Message: s.ErrorMessage})
	}
	if err != nil {
		return driver.Change{}, err
	}
	if outcome.Type != "" {
		c.Events = append(c.Events, outcome)
	}
	if r.Action == ResolveFail && plan.onFailure(s.Key) == rbtype.OnFailureAbort {
		if err := abortFromResolve(now, worker, rb.ID, steps, s, &c); err != nil {
			return driver.Change{}, err
		}
	}
	if rb.Status == rbtype.RunbookEscalated {
		// The escalation had ended the runbook: it runs until it settles
		// anew, as the resolution leaves it.
		c.Runbook = reopened(rb.ID, rbtype.RunbookExecuting)
	}
	return c, nil
}

// abortFromResolve does to the other steps what an abort inside an advance
// does (transition.failed) when a person fails a step under on_failure:
// abort: what has not started is skipped, parks are cancelled with their
// invocations, so that the runbook ends failed at once, and compensates,
// rather than after its other branches ran.
func abortFromResolve(now time.Time, worker string, runbookID uuid.UUID, steps []*driver.Step, failed *driver.Step, c *driver.Change) error {
	data := StepSkippedData{Because: failed.Key, Status: failed.Status, Aborted: true}
	for _, o := range steps {
		to := abortsTo(o)
		if to == "" || o == failed {
			continue
		}
		typ := rbtype.EventStepSkipped
		if to == rbtype.StepCancelled {
			typ = rbtype.EventStepCancelled
			if o.InvocationID != nil {
				c.Finish = append(c.Finish, *o.InvocationID)
				c.FinishStatus = rbtype.InvocationCancelled
			}
		}
		o.Status, o.NextAttemptAt, o.FinishedAt = to, nil, &now
		ev, err := newEvent(runbookID, typ, worker, o, data)
		if err != nil {
			return err
		}
		c.Steps = append(c.Steps, o.Change())
		c.Events = append(c.Events, ev)
	}
	return nil
}

// addBlockedAfter adds to pick the skipped and cancelled steps downstream
// of one step.
func addBlockedAfter(plan *planInfo, steps []*driver.Step, key string, pick map[string]bool) {
	pick[key] = true
	addBlockedDescendants(plan, steps, pick)
	delete(pick, key)
}
