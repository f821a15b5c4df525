package runtime

import (
	"github.com/runbookdev/runbook/driver"
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
func (t *transition) draftOnly(s *driver.Step) bool {
	if t.rb.Mode != rbtype.ModeDraftOnly {
		return false
	}
	switch t.execution(s).SideEffects {
	case rbtype.SideEffectsExternalCall, rbtype.SideEffectsHuman:
		return true
	}
	return false
}

// skipDraft skips a step a draft_only runbook does not run.
func (t *transition) skipDraft(s *driver.Step) {
	s.Status, s.FinishedAt = rbtype.StepSkipped, &t.now
	s.ErrorCode, s.ErrorMessage = rbtype.CodeDraftOnly, "a draft_only runbook does not run steps with outside effects"
	t.touch(s)
	t.event(rbtype.EventStepSkipped, s, StepSkippedData{Reason: rbtype.CodeDraftOnly})
}
