package driver

import "time"

// PruneOptions says what one batch of Prune deletes.
type PruneOptions struct {
	// FinishedBefore: runbooks that finished (compensations and
	// escalations done) before then go, with everything they own.
	FinishedBefore time.Time
	// ReceiptsBefore: receipts of the runbook and runbook-step scopes
	// made before then go too, once their runbook and every runbook of
	// its lineage are gone. Until then a resubmission of a pruned
	// runbook (same request key, so the same runbook id and step keys)
	// finds the receipts of what it did and repeats no effect. Receipts of
	// the global scope, and those written before receipts knew their
	// scope, are kept for ever. Zero keeps every receipt.
	ReceiptsBefore time.Time
	// LedgerBefore: ledger rows (step_attempts) of attempts that
	// finished before then go, whatever their runbook: the ledger is the
	// bill and what budgets are counted from, kept by its own window.
	// Zero keeps the ledger. A plain attempt's row, kept in its step's
	// row (docs/design/runtime.md, "The job ledger and the edges"), is
	// written out when its runbook is pruned, and goes by this window
	// from then on.
	LedgerBefore time.Time
	// Limit bounds each kind of row a batch deletes by the runbook (Limit
	// runbooks), or, for receipts and ledger rows, by the row.
	Limit int
}

// Pruned counts what a prune deleted.
type Pruned struct {
	Runbooks, Steps, Edges, Events, Invocations, Notifications, Mutations, Receipts, Attempts int64
}

// Add adds another batch's counts.
func (p *Pruned) Add(o Pruned) {
	p.Runbooks += o.Runbooks
	p.Steps += o.Steps
	p.Edges += o.Edges
	p.Events += o.Events
	p.Invocations += o.Invocations
	p.Notifications += o.Notifications
	p.Mutations += o.Mutations
	p.Receipts += o.Receipts
	p.Attempts += o.Attempts
}

// Done reports whether the batch deleted nothing: the prune is over.
func (p Pruned) Done() bool { return p == Pruned{} }
