package driver

import "github.com/runbookdev/runbook/rbtype"

// The rows the state machine reasons about are rbtype's, so that package machine holds them
// without importing the driver; these names keep the driver's vocabulary for its callers.
type (
	Runbook          = rbtype.Runbook
	Trace            = rbtype.Trace
	Lineage          = rbtype.Lineage
	Step             = rbtype.Step
	StepState        = rbtype.StepState
	Edge             = rbtype.Edge
	Lease            = rbtype.Lease
	Invocation       = rbtype.Invocation
	Notification     = rbtype.Notification
	Receipt          = rbtype.Receipt
	ReceiptKey       = rbtype.ReceiptKey
	Event            = rbtype.Event
	Mutation         = rbtype.Mutation
	CacheEntry       = rbtype.CacheEntry
	Usage            = rbtype.Usage
	Attempt          = rbtype.Attempt
	Reservation      = rbtype.Reservation
	UnreservedChange = rbtype.UnreservedChange
	Outcome          = rbtype.Outcome
	Arguments        = rbtype.Arguments
	TenantBudget     = rbtype.TenantBudget
	AdvanceState     = rbtype.AdvanceState
	AdvanceWrite     = rbtype.AdvanceWrite
	NewRunbook       = rbtype.NewRunbook
	NewStep          = rbtype.NewStep
	StepChange       = rbtype.StepChange
	RunbookChange    = rbtype.RunbookChange
	LeaseRequest     = rbtype.LeaseRequest
	InvocationUpdate = rbtype.InvocationUpdate
	StepKey          = rbtype.StepKey
	StepData         = rbtype.StepData
)
