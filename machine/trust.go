package machine

import (
	"fmt"

	"github.com/runbookdev/runbook/rbtype"
)

// Earned trust (docs/design/semantics.md section 17). A tenant's people
// approving attempts of a verb at its gates earn it running unattended:
// once the count of approvals with no rejection, and no failed attempt,
// since reaches the policy's trust threshold for the verb, admission
// lets its steps run unattended (registry/policy's Decide). The machine
// says what moves a count; the store moves it in the same transaction
// (rbtype.TrustChange), so a count is as durable as the decision.

// countTrust moves the tenant's count for s's verb: an approval adds one,
// anything else resets it.
func (t *transition) countTrust(s *rbtype.Step, approved bool, reason string) {
	after := 0
	if t.book != nil && t.book.Pol != nil {
		if rule, _, ok := t.book.Pol.Tenant(t.Rb.Tenant).Trust(s.Verb); ok {
			after = rule.After
		}
	}
	t.trust = append(t.trust, rbtype.TrustChange{
		Tenant: t.Rb.Tenant, Verb: s.Verb, Approved: approved, After: after,
		RunbookID: t.Rb.ID, StepKey: s.Key, Attempt: s.Attempt, WorkerID: t.m.Worker, Reason: reason,
	})
}

// failedAttemptResetsTrust resets the count of a verb one of whose
// attempts failed: trust is for a verb that works.
func (t *transition) failedAttemptResetsTrust(s *rbtype.Step, attempt int, code rbtype.ErrorCode) {
	t.countTrust(s, false, fmt.Sprintf("attempt %d of step %s failed %s", attempt, s.Key, code))
}
