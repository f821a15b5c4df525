package rbtype

import "github.com/google/uuid"

// Earned trust (docs/design/semantics.md section 17): per tenant and
// verb, the attempts its people approved at a gate with no rejection, and
// no failed attempt, since. A policy's trust: lets a verb run unattended
// once its count reaches the rule's after.

// TrustChange moves one tenant's count for one verb: an approval adds
// one; a rejection or a failed attempt resets it to zero.
type TrustChange struct {
	Tenant string
	Verb   string
	// Approved counts an approval; false resets the count.
	Approved bool
	// After is the tenant's trust rule's threshold for the verb when the
	// change was made, 0 when no rule covers it: then the count moves but
	// no TRUST_EARNED or TRUST_LOST is written.
	After int
	// RunbookID, StepKey, Attempt and WorkerID place the event the change
	// may write; Reason says what moved the count.
	RunbookID uuid.UUID
	StepKey   string
	Attempt   int
	WorkerID  string
	Reason    string
}

// TrustCount is a tenant's count for a verb, as stored.
type TrustCount struct {
	Verb      string `json:"verb"`
	Approvals int    `json:"approvals"`
	Resets    int    `json:"resets"`
}
