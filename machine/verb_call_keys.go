package machine

import (
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Calls a step makes of another verb on its behalf (docs/design/semantics.md
// section 16): an escalation's page, a reminder. Each is keyed by its own
// verb's idempotency scope and key fields, as a step of that verb would
// be, so a page or a revoke reaches its provider once per key, however
// many times the step times out or is retried, and whichever step or
// runbook asks for it under a shared scope.

// Purposes of the calls VerbCallKey keys.
const (
	// PurposeEscalate is an escalating wait's timeouts.escalation call.
	PurposeEscalate = "escalate"
	// PurposeRemind is a durable wait's timeouts.remind_after call.
	PurposeRemind = "remind"
)

// VerbCallKey is the idempotency key of a call a step makes of another
// verb on its behalf, for purpose (PurposeEscalate, PurposeRemind): the
// call's own verb (verb, with its idempotency block idem) and the
// arguments it is called with decide, as IdempotencyKey decides a step's.
// In the runbook_step scope the key names the step and the purpose but
// never the attempt, so a retried step that times out again finds the
// receipt of its first page; in the runbook, tenant and global scopes the
// key is shared as any step's is. o is the origin of the step the call is
// made for (OriginOf with the called verb's execution).
func VerbCallKey(o KeyOrigin, stepKey, purpose, verb string, idem verbs.Idempotency, args map[string]any) string {
	if idem.Scope == "" {
		idem.Scope = rbtype.ScopeRunbookStep
	}
	return IdempotencyKey(o, stepKey+":"+purpose, verb, idem, args)
}

// verbCallReceiptKeys are the receipts of the escalations and
// compensations a round prepared, and of the steps in doubt and the
// attached twins it may settle: each of them completes from its receipt,
// uncalled.
func (r *Round) verbCallReceiptKeys() []rbtype.ReceiptKey {
	var keys []rbtype.ReceiptKey
	for _, p := range r.escalations {
		keys = append(keys, p.receipt)
	}
	for _, p := range r.compensations {
		keys = append(keys, p.receipt)
	}
	for _, t := range r.States {
		keys = append(keys, t.doubtReceiptKeys()...)
		keys = append(keys, t.twinReceiptKeys()...)
	}
	return keys
}
