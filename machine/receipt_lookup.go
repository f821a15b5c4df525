package machine

import (
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Receipts are looked up by key, whatever happened to the runbook that
// wrote them (docs/daemon.md, "Effects once"). A step-scoped key names the
// lineage's root and the step, not a row: a runbook pruned and submitted
// again derives the same id from the same request, and so the same keys,
// and a regeneration or a resubmission after a failure inherits its
// parent's. Each of them must find the receipt of an effect that happened
// under the key, or the effect happens again.

// looksUpReceipt reports whether a step of a verb with exec needs its
// receipt looked up before it is called: every step with an effect. A
// step without side effects has nothing to repeat (and writes no receipt:
// applyOutcome), so a chain of pure steps still starts without a read
// (inline.go).
func looksUpReceipt(exec *verbs.Execution) bool {
	return exec.SideEffects != rbtype.SideEffectsNone
}
