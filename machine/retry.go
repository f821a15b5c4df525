package machine

import (
	"fmt"
	"slices"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// RunbookRetriedData is the data of RUNBOOK_RETRIED, and the payload of
// its mutation.
type RunbookRetriedData struct {
	Steps []string `json:"steps"`
	By    string   `json:"by,omitempty"`
	// Execute: a draft_only runbook now runs for real.
	Execute bool   `json:"execute,omitempty"`
	Note    string `json:"note,omitempty"`
}

// retryable are the final statuses a retry sends back to pending.
var retryable = []rbtype.StepStatus{rbtype.StepFailed, rbtype.StepSkipped, rbtype.StepCancelled, rbtype.StepEscalated}

// addBlockedDescendants adds to pick the skipped and cancelled steps
// downstream of those picked: what their failure left behind.
// A template comes before its instances in plan order but is made from
// them (whole_lists.go), so the pass repeats until it adds nothing.
func addBlockedDescendants(plan *PlanInfo, steps []*rbtype.Step, pick map[string]bool) {
	for added := true; added; {
		added = false
		for _, s := range steps {
			if pick[s.Key] || (s.Status != rbtype.StepSkipped && s.Status != rbtype.StepCancelled) {
				continue
			}
			from := append(append(slices.Clone(plan.preds[s.Key]), plan.madeFrom(s.Key)...), plan.loopMates(s.Key)...)
			for _, p := range from {
				if pick[p] {
					pick[s.Key], added = true, true
					break
				}
			}
		}
	}
}

// afterDraft reports whether a step was skipped after a draft: one of its
// predecessors is skipped DRAFT_ONLY. It runs when the draft is run for
// real (--execute), not on a retry of the draft's failures.
func (t *transition) afterDraft(s *rbtype.Step) bool {
	if s.Status != rbtype.StepSkipped {
		return false
	}
	for _, p := range t.plan.preds[s.Key] {
		if t.draftTaints(p) {
			return true
		}
	}
	return false
}

// reopenLists adds to pick the ended templates of the instances picked,
// and what their lists kept from running: a list is whole again only
// once the iteration run again has settled (whole_lists.go).
func reopenLists(plan *PlanInfo, steps []*rbtype.Step, pick map[string]bool) {
	more := false
	// To a fixpoint: an inner list's instance (u[0][1]) reopens its
	// template (u[0]), which is itself an instance of the outer list's
	// (u), which comes before it in plan order.
	for added := true; added; {
		added = false
		for _, s := range steps {
			if base, _, ok := instanceOf(s.Key); ok && pick[s.Key] && plan.IsTemplate(base) && !pick[base] {
				pick[base], more, added = true, true, true
			}
		}
	}
	if more {
		addBlockedDescendants(plan, steps, pick)
	}
}

// resetToPending makes a step pending again, its error and times cleared;
// a rejected gate asks again. Attempts and the idempotency key stay.
func (t *transition) resetToPending(s *rbtype.Step) {
	t.moveStep(s, rbtype.StepPending)
	s.NextAttemptAt, s.FinishedAt, s.StartedAt = nil, nil, nil
	s.ErrorCode, s.ErrorMessage, s.InvocationID = "", "", nil
	if s.GateDecision == rbtype.GateRejected {
		s.GateDecision, s.GateDecidedBy, s.GateDecidedAt, s.GateComment = rbtype.GateUndecided, "", nil, ""
	}
}

// RetryRunbook is a retry: the steps back to pending with their errors
// cleared (a rejected gate asks again), the runbook executing (or still
// held open), its event and mutation; the same round starts what is
// ready. It leaves the steps' keys, in plan order, in keys.
type RetryRunbook struct {
	O    RetryOptions
	Keys []string
}

func (c *RetryRunbook) apply(t *transition) error {
	o, rb, steps := c.O, t.Rb, t.Steps
	switch {
	case o.Execute && rb.Mode != rbtype.ModeDraftOnly:
		return fmt.Errorf("%w: runbook %s runs in mode %s; only a draft_only runbook can be run for real", rbtype.ErrConflict, rb.ID, rb.Mode)
	case o.Execute && rb.Status.Running():
		return fmt.Errorf("%w: runbook %s is %s; run its draft for real once it has finished", rbtype.ErrConflict, rb.ID, rb.Status)
	case o.Execute && rb.Status == rbtype.RunbookCancelled:
		return fmt.Errorf("%w: runbook %s is cancelled", rbtype.ErrConflict, rb.ID)
	case o.Execute:
	case rb.Status == rbtype.RunbookFailed, rb.Status == rbtype.RunbookPartial, rb.Status == rbtype.RunbookEscalated, rb.Status == rbtype.RunbookInProgress:
	default:
		return fmt.Errorf("%w: runbook %s is %s; only a failed, partial, escalated or held-open runbook can be retried", rbtype.ErrConflict, rb.ID, rb.Status)
	}
	if t.hooking() {
		return fmt.Errorf("%w: runbook %s is running its failure hooks; retry it once they have ended", rbtype.ErrConflict, rb.ID)
	}
	for _, s := range steps {
		if Undone(s) {
			return fmt.Errorf("%w: runbook %s compensated its completed steps (%s's among them), so it cannot be retried; start it again as a new generation: rbd regenerate %s", rbtype.ErrConflict, rb.ID, s.Key, rb.ID)
		}
		if err := escalationRunning(s); err != nil {
			return err
		}
	}
	pick := map[string]bool{}
	switch {
	case len(o.Steps) == 0 && o.Execute:
		for _, s := range steps {
			if s.Status == rbtype.StepSkipped && s.ErrorCode == rbtype.CodeDraftOnly {
				pick[s.Key] = true
			}
		}
		addBlockedDescendants(t.plan, steps, pick)
	case len(o.Steps) == 0 && rb.Mode == rbtype.ModeDraftOnly:
		// A draft's skips are not failures: run again what failed, what
		// that left behind, and what an abort skipped, but not the drafts,
		// whose next step is --execute.
		for _, s := range steps {
			if slices.Contains(retryable, s.Status) && s.ErrorCode != rbtype.CodeDraftOnly && !t.isHookStep(s) && !t.afterDraft(s) {
				pick[s.Key] = true
			}
		}
		addBlockedDescendants(t.plan, steps, pick)
		if len(pick) == 0 {
			return fmt.Errorf("%w: draft_only runbook %s has no failed step to retry; to run its draft for real: rbd retry %s --execute",
				rbtype.ErrConflict, rb.ID, rb.ID)
		}
	case len(o.Steps) == 0:
		for _, s := range steps {
			if slices.Contains(retryable, s.Status) && !t.isHookStep(s) {
				pick[s.Key] = true
			}
		}
	default:
		for _, key := range o.Steps {
			s, err := t.stepByKey(key)
			if err != nil {
				return err
			}
			if !slices.Contains(retryable, s.Status) {
				return fmt.Errorf("%w: step %q is %s; only failed, skipped, cancelled and escalated steps can be retried", rbtype.ErrConflict, key, s.Status)
			}
			if t.isHookStep(s) {
				return fmt.Errorf("%w: step %q is a failure hook, which runs once, after a failure; it is not retried", rbtype.ErrConflict, key)
			}
			pick[key] = true
		}
		// What a named step's failure left skipped or cancelled downstream
		// runs again with it.
		addBlockedDescendants(t.plan, steps, pick)
	}
	if len(pick) == 0 {
		return fmt.Errorf("%w: runbook %s has no failed, skipped, cancelled or escalated step to retry", rbtype.ErrConflict, rb.ID)
	}
	reopenLists(t.plan, steps, pick)
	for _, s := range steps {
		if pick[s.Key] && !o.Verbs.Allows(s.Verb) {
			return fmt.Errorf("%w: step %q calls verb %s, which this token's scope (verbs=%s) does not allow", rbtype.ErrForbidden, s.Key, s.Verb, o.Verbs)
		}
	}
	for _, s := range steps {
		if pick[s.Key] {
			c.Keys = append(c.Keys, s.Key)
			t.resetToPending(s)
			t.touch(s)
		}
		if t.isHookStep(s) && s.Status == rbtype.StepSkipped && s.ErrorCode == rbtype.CodeNoFailure {
			// Skipped because the runbook completed: it may yet fail.
			t.resetToPending(s)
			t.touch(s)
		}
	}
	t.mutate(rbtype.EventRunbookRetried, rbtype.MutationRetry, o.By, nil,
		RunbookRetriedData{Steps: c.Keys, By: o.By, Execute: o.Execute, Note: o.Note})
	status := rbtype.RunbookExecuting
	if rb.Status == rbtype.RunbookInProgress {
		status = rbtype.RunbookInProgress // still held open
	}
	t.reopen(status)
	if o.Execute {
		mode := rbtype.ModeExecute
		t.runbookChange().Mode = &mode
		t.Rb.Mode = mode
	}
	return nil
}

// RetryOptions says what a retry runs again, and who asks.
type RetryOptions struct {
	// Steps to retry; empty means every failed, skipped, cancelled and
	// escalated step (with Execute: every DRAFT_ONLY step).
	Steps []string
	By    string
	// Execute runs a finished draft_only runbook for real: its mode
	// becomes execute and the steps the draft skipped run, with the
	// drafts it made.
	Execute bool
	// Note is the claimed By when the token's actor differs.
	Note string
	// Verbs is the caller's token scope: a retry runs steps again, and
	// may not run one whose verb the token could not have submitted.
	Verbs policy.VerbScope
}

// Undone reports whether a step's effect was undone, or is being: a
// runbook that compensated is not retried (submit it again). A
// compensation a draft skipped undid nothing.
func Undone(s *rbtype.Step) bool {
	return s.CompensationStatus != rbtype.CompensationNone && s.CompensationStatus != rbtype.CompensationSkipped
}
