package machine

import (
	"github.com/runbookdev/runbook/rbtype"
)

// In doubt (docs/design/semantics.md section 16). A step whose lease is
// reclaimed (its worker died during the call) is normally called again
// under the same idempotency key: the provider answers the repeat with
// what it did the first time. A provider that ignores keys would do it
// twice. Its verb says so (idempotency: {provider_dedupes: false}), or its
// handler does (KeyIgnorer), and then a reclaimed call with no receipt is
// not made again: the step
// becomes in_doubt (STEP_IN_DOUBT), shows in blocked_on and the inbox,
// and waits for a person to say what happened (rbd resolve: complete
// with a result, retry, fail). A receipt found under its key later (one
// written by another runbook sharing a global key, say) completes it.

// StepInDoubtData is the data of STEP_IN_DOUBT: why the step is not
// called again, and the handler the call went to.
type StepInDoubtData struct {
	Handler string `json:"handler"`
	Reason  string `json:"reason"`
}

// inDoubtReason is STEP_IN_DOUBT's reason for a reclaimed lease.
const inDoubtReason = "the call's worker stopped before it recorded an outcome, and the provider ignores idempotency keys (provider_dedupes: false): " +
	"calling it again could repeat the effect; say what happened with rbd resolve (complete, retry or fail)"

// reclaimInDoubt puts a running step whose lease was lost in doubt,
// instead of calling it again, when its provider ignores keys. It
// reports whether it did. A step that never reached its handler (attempt
// 0) cannot be in doubt.
func (t *transition) reclaimInDoubt(s *rbtype.Step) bool {
	exec := t.execution(s)
	if t.carriesKey(s, &exec) || !looksUpReceipt(&exec) || s.Attempt == 0 {
		return false
	}
	t.moveStep(s, rbtype.StepInDoubt)
	t.touch(s)
	t.m.Observe.LeaseReclaimed()
	t.event(rbtype.EventStepInDoubt, s, StepInDoubtData{Handler: exec.Handler, Reason: inDoubtReason})
	return true
}

// doubtReceiptKeys are the receipts that would settle this runbook's steps
// in doubt: an effect recorded under the step's key, by any runbook.
func (t *transition) doubtReceiptKeys() []rbtype.ReceiptKey {
	var keys []rbtype.ReceiptKey
	for _, s := range t.Steps {
		if s.Status == rbtype.StepInDoubt && s.IdempotencyKey != "" {
			keys = append(keys, rbtype.ReceiptKey{Handler: t.execution(s).Handler, IdempotencyKey: s.IdempotencyKey})
		}
	}
	return keys
}

// settleDoubts completes the steps in doubt whose receipt was found: the
// effect happened, and the receipt says with what result.
func (t *transition) settleDoubts(receipts map[rbtype.ReceiptKey]rbtype.Receipt) {
	if !t.Rb.Status.Running() || len(receipts) == 0 {
		return
	}
	for _, s := range t.Steps {
		if s.Status != rbtype.StepInDoubt || s.IdempotencyKey == "" {
			continue
		}
		if r, ok := receipts[rbtype.ReceiptKey{Handler: t.execution(s).Handler, IdempotencyKey: s.IdempotencyKey}]; ok {
			t.finishInvocation(s, rbtype.InvocationCompleted)
			t.complete(s, r.Result, false, StepSucceededData{Receipt: true})
		}
	}
}

// resolveInDoubt applies a person's resolution of a step in doubt. A
// result they give is recorded as the call's receipt too, so that nothing
// later (a resubmission, a twin under a global key) makes the call again.
func (t *transition) resolveInDoubt(s *rbtype.Step, action string, result []byte) {
	exec := t.execution(s)
	switch action {
	case ResolveComplete:
		t.finishInvocation(s, rbtype.InvocationCompleted)
		if s.IdempotencyKey != "" {
			t.receipts = append(t.receipts, rbtype.Receipt{
				Handler: exec.Handler, IdempotencyKey: s.IdempotencyKey, RunbookID: t.Rb.ID, Scope: exec.Idempotency.Scope,
				StepKey: s.Key, Result: result, ResultHash: HashJSON(result),
			})
		}
	case ResolveFail:
		t.finishInvocation(s, rbtype.InvocationCancelled)
	}
}
