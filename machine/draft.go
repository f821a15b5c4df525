package machine

import (
	"github.com/runbookdev/runbook/rbtype"
)

// A draft_only runbook (docs/design/semantics.md section 7) runs everything that stays
// inside: lookups, a model's drafts, its own database writes. A step whose
// side effects reach the outside world (an external call, a person's work)
// does not run: when it would become ready it is skipped, with the reason
// DRAFT_ONLY, and the steps after it are skipped as after any skipped
// step. The view's next_actions names each, with the command that runs
// them for real once a person has read the drafts: rbd retry ID --execute.

// draftOnly reports whether s is a step its draft_only runbook skips.
func (t *transition) draftOnly(s *rbtype.Step) bool {
	return t.draftSkips(t.execution(s).SideEffects)
}

// draftSkips reports whether this runbook, a draft_only one, does not run
// a call with these side effects: a step's, a compensation's or an
// escalation's alike. A draft calls nothing outside, whatever the call is
// for.
func (t *transition) draftSkips(effects rbtype.SideEffects) bool {
	if t.Rb.Mode != rbtype.ModeDraftOnly {
		return false
	}
	switch effects {
	case rbtype.SideEffectsExternalCall, rbtype.SideEffectsHuman:
		return true
	}
	return false
}

// draftSkipMessage says why a draft did not run a compensation or an
// escalation, after its code.
const draftSkipMessage = ": a draft_only runbook does not run calls with outside effects"

// DraftSkippedData is the data of COMPENSATION_SKIPPED and
// ESCALATION_SKIPPED.
type DraftSkippedData struct {
	Reason rbtype.ErrorCode `json:"reason"`
	Verb   string           `json:"verb"`
}

// skipCompensation records a compensation a draft does not run: the step
// stays as the draft left it, nothing was undone outside because nothing
// was done outside.
func (t *transition) skipCompensation(s *rbtype.Step, verb string) {
	s.CompensationStatus, s.CompensationError = rbtype.CompensationSkipped, string(rbtype.CodeDraftOnly)+draftSkipMessage
	t.touch(s)
	t.event(rbtype.EventCompensationSkipped, s, DraftSkippedData{Reason: rbtype.CodeDraftOnly, Verb: verb})
}

// skipEscalation records an escalation a draft does not run: the step is
// escalated all the same, waiting for a person, and the view's next
// actions say how to run it for real.
func (t *transition) skipEscalation(s *rbtype.Step, verb string) {
	s.EscalationStatus, s.EscalationError = rbtype.CompensationSkipped, string(rbtype.CodeDraftOnly)+draftSkipMessage
	t.touch(s)
	t.event(rbtype.EventEscalationSkipped, s, DraftSkippedData{Reason: rbtype.CodeDraftOnly, Verb: verb})
	t.escalationsSettled()
}

// skipDraft skips a step a draft_only runbook does not run.
func (t *transition) skipDraft(s *rbtype.Step) {
	t.moveStep(s, rbtype.StepSkipped)
	s.FinishedAt = &t.Now
	s.ErrorCode, s.ErrorMessage = rbtype.CodeDraftOnly, "a draft_only runbook does not run steps with outside effects"
	t.touch(s)
	t.event(rbtype.EventStepSkipped, s, StepSkippedData{Reason: rbtype.CodeDraftOnly})
}
