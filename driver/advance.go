package driver

import (
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// AdvanceState is what an advance reads of its runbooks, under their
// locks (Tx.LoadForAdvance).
type AdvanceState struct {
	Runbooks []*Runbook // without plans
	// Steps are the live steps: all but those plainly complete (a
	// completed step matters only as a predecessor, and its result is
	// fetched by key when a dependent starts), in runbook and plan order.
	Steps         []*Step
	Invocations   []Invocation   // active
	Leases        []Lease        // active, unexpired
	Notifications []Notification // received, for the active invocations
	// Released maps the steps whose leases this worker released to the
	// attempt each lease was for: the outcomes it may record.
	Released map[int64]int
}

// AdvanceWrite is everything an advance changes, written in one round
// trip (Tx.WriteAdvance).
type AdvanceWrite struct {
	NewInvocations    []Invocation
	InvocationUpdates []InvocationUpdate
	// Finished ends active invocations, by their final status.
	Finished   map[rbtype.InvocationStatus][]uuid.UUID
	Steps      []StepChange
	Worker     string
	LeaseUntil time.Time
	Leases     []LeaseRequest
	Processed  []int64 // notifications consumed
	Receipts   []Receipt
	// Cache stores results for reuse; an entry for a key that exists
	// replaces it (a regeneration refreshes what it bypassed).
	Cache []CacheEntry
	// Attempts records finished attempts in the job ledger; a row for an
	// attempt that exists (a park, then its resume) is completed.
	Attempts []Attempt
	Events   []Event
	Runbooks []RunbookChange
	// Compensate marks completed steps, by runbook and key, as waiting to
	// be undone.
	Compensate map[uuid.UUID][]string
}

// Empty reports whether the write changes nothing.
func (w *AdvanceWrite) Empty() bool {
	return len(w.NewInvocations) == 0 && len(w.InvocationUpdates) == 0 && len(w.Finished) == 0 &&
		len(w.Steps) == 0 && len(w.Leases) == 0 && len(w.Processed) == 0 && len(w.Receipts) == 0 && len(w.Cache) == 0 && len(w.Attempts) == 0 &&
		len(w.Events) == 0 && len(w.Runbooks) == 0 && len(w.Compensate) == 0
}
