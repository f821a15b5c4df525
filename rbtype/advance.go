package rbtype

import (
	"time"

	"github.com/google/uuid"
)

// AdvanceState is what an advance reads of its runbooks, under their
// locks (Tx.LoadForAdvance), as stored.
type AdvanceState struct {
	Runbooks []*Runbook // without plans
	// Steps are the live steps: all but those plainly complete (a
	// completed step matters only as a predecessor, and its result is
	// fetched by key when a dependent starts), in runbook and plan order;
	// or all of them (LoadOptions.AllSteps). Each carries its lease, if
	// one is stored, expired or not.
	Steps         []*Step
	Invocations   []Invocation   // active
	Notifications []Notification // received, for the active invocations
	// Budgets are the runbooks' tenants' budgets and spend, by tenant
	// (with LoadOptions.Day).
	Budgets map[string]TenantBudget
}

// AdvanceWrite is everything an advance changes, written in one round
// trip (Tx.WriteAdvance).
type AdvanceWrite struct {
	NewInvocations    []Invocation
	InvocationUpdates []InvocationUpdate
	// Finished ends active invocations, by their final status.
	Finished   map[InvocationStatus][]uuid.UUID
	Steps      []StepChange
	Worker     string
	LeaseUntil time.Time
	Leases     []LeaseRequest
	// EndLeases are the steps whose leases end: released by the outcomes
	// recorded, or expired.
	EndLeases []int64
	Processed []int64 // notifications consumed
	Receipts  []Receipt
	// Cache stores results for reuse; an entry for a key that exists
	// replaces it (a regeneration refreshes what it bypassed).
	Cache []CacheEntry
	// Attempts records finished attempts in the job ledger; a row for an
	// attempt that exists (a park, then its resume) is completed.
	Attempts []Attempt
	// Reservations are what attempts starting reserve of budgets, and
	// what attempts ending give back (negative), added to spend as usage
	// is (docs/design/semantics.md, "Budgets hold under concurrency").
	Reservations []Reservation
	// Unreserved moves runbooks' counts of attempts running that reserved
	// nothing, and marks runbooks waiting for their tenant's to end.
	Unreserved []UnreservedChange
	// Outcomes records what steps produced (docs/design/semantics.md section 13).
	Outcomes []Outcome
	// Arguments keeps arguments a step held before it started again with
	// others, so that every attempt's arguments stay readable.
	Arguments []Arguments
	Events    []Event
	Runbooks  []RunbookChange
	// Compensate marks completed steps, by runbook and key, as waiting to
	// be undone.
	Compensate map[uuid.UUID][]string
	// NewSteps and NewEdges grow running runbooks (an extension).
	NewSteps map[uuid.UUID][]NewStep
	NewEdges map[uuid.UUID][]Edge
	// Mutations log who changed a runbook and how (a command).
	Mutations []Mutation
	// Trust moves tenants' earned-trust counts (an approval, a rejection,
	// a failed attempt), with TRUST_EARNED or TRUST_LOST when a count
	// reaches or leaves a policy's threshold.
	Trust []TrustChange
}

// Empty reports whether the write changes nothing.
func (w *AdvanceWrite) Empty() bool {
	return len(w.NewInvocations) == 0 && len(w.InvocationUpdates) == 0 && len(w.Finished) == 0 &&
		len(w.Steps) == 0 && len(w.Leases) == 0 && len(w.Processed) == 0 && len(w.Receipts) == 0 && len(w.Cache) == 0 && len(w.Attempts) == 0 && len(w.Reservations) == 0 && len(w.Unreserved) == 0 &&
		len(w.Outcomes) == 0 && len(w.Arguments) == 0 &&
		len(w.Events) == 0 && len(w.Runbooks) == 0 && len(w.Compensate) == 0 && len(w.EndLeases) == 0 &&
		len(w.NewSteps) == 0 && len(w.NewEdges) == 0 && len(w.Mutations) == 0 && len(w.Trust) == 0
}
