package machine

import (
	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// outbox is what one runbook's transition writes and does once its
// transaction commits: the rows it changed and added, the events, the
// leases it asks for and the handler calls they cover. The transition
// (transition.go) holds the state it reasons about; this is all that
// leaves it, through writeTo (round.go) into one rbtype.AdvanceWrite.
type outbox struct {
	Dirty     map[int64]bool
	mutations []rbtype.Mutation
	// newSteps and newEdges are an extension's (extend.go); the steps
	// take part in the next round, once stored.
	newSteps          []rbtype.NewStep
	newEdges          []rbtype.Edge
	completed         map[int64]bool
	events            []rbtype.Event
	Runbook           *rbtype.RunbookChange
	finishInvocations map[rbtype.InvocationStatus][]uuid.UUID
	processed         []int64 // notifications consumed
	receipts          []rbtype.Receipt
	cacheWrites       []rbtype.CacheEntry
	attempts          []rbtype.Attempt
	reservations      []rbtype.Reservation      // budget_reserve.go
	unreserved        []rbtype.UnreservedChange // budget_unreserved.go
	// outcomes are the outcomes steps produced (outcome.go), and
	// arguments the arguments kept when a step started again with others.
	outcomes  []rbtype.Outcome
	arguments []rbtype.Arguments
	// attemptAt is where an attempt stands in attempts, by id, so that a
	// park and its resume in one transaction make one row without a scan.
	attemptAt map[uuid.UUID]int
	// plain are the attempts, by step, that the step's row may keep
	// instead of a ledger row (ledger_implicit.go).
	plain             map[int64]*plainAttempt
	newInvocations    []rbtype.Invocation
	invocationUpdates []rbtype.InvocationUpdate
	leaseRequests     []rbtype.LeaseRequest
	calls             []*PendingCall
	// readyEvent is where a step's STEP_READY stands in events, so that
	// starting it in the same transaction can drop it: STEP_STARTED says
	// as much, and the ledger stays minimal.
	readyEvent map[int64]int
	// compensate lists completed steps to mark for compensation.
	compensate []string
	// trust moves earned-trust counts (trust.go).
	trust []rbtype.TrustChange
	// Spans are the attempts' spans to emit once the transaction commits
	// (spans.go), collected only when spans are emitted.
	Spans []FinishedAttempt
	// err is the first error met building what to write (an event whose
	// data does not encode, a move the state diagram lacks); the
	// transaction is abandoned with it.
	err error
}
