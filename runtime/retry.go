package runtime

import (
	"context"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
)

// Retry runs a failed, partial or escalated runbook again from where it
// stopped (docs/design/semantics.md section 6): its failed, skipped, cancelled and
// escalated steps, or those named and the skipped or cancelled steps
// downstream of them, return to pending. Attempts continue from where they
// were and idempotency keys stay the same, so an effect that did happen
// returns its receipt and is not repeated. A complete or cancelled
// runbook, or one whose completed steps were compensated, is a conflict.
func (e *Engine) Retry(ctx context.Context, runbookID uuid.UUID, o machine.RetryOptions) (*apitype.Retried, error) {
	o.By, o.Note = actorOf(ctx, o.By)
	if s, ok := scopeOf(ctx); ok {
		o.Verbs = s.Verbs
	}
	c := &machine.RetryRunbook{O: o}
	if err := e.runCommand(ctx, runbookID, c); err != nil {
		return nil, err
	}
	return &apitype.Retried{Steps: c.Keys}, nil
}

// planOf decodes a runbook's plan, through the cache.
func (e *Engine) planOf(rb *driver.Runbook) (*machine.PlanInfo, error) {
	if info, ok := e.plans.lookup(rb.PlanHash); ok {
		return info, nil
	}
	return e.plans.decode(rb.PlanHash, rb.Plan)
}
