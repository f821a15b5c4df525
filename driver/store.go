package driver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// Store is what the runtime needs of its database outside a runbook's
// lock, and the way into a transaction. It offers plain operations: the
// runtime composes them, in its own transactions, and the store never
// calls back into the runtime (River's driver is the model).
type Store interface {
	// Begin starts a transaction; the caller ends it with Commit or
	// Rollback.
	Begin(ctx context.Context) (Tx, error)

	// ReadView runs fn with reads that all see one snapshot of the
	// database, so that a runbook's view is of one moment.
	ReadView(ctx context.Context, fn func(ViewReader) error) error

	// ClaimDue hands out up to limit runbooks whose wake-up has passed
	// and pushes their wake-up claimFor ahead.
	ClaimDue(ctx context.Context, limit int, claimFor time.Duration) ([]uuid.UUID, error)
	// RenewLeases extends the worker's active leases, returning the steps
	// it still held.
	RenewLeases(ctx context.Context, worker string, expiresAt time.Time, stepIDs []int64) ([]int64, error)
	// WorkerLeases lists the worker's active leases.
	WorkerLeases(ctx context.Context, worker string) ([]Lease, error)
	// Signal tells every listening worker that runbooks are due, after the
	// transaction that made them due has committed. It may be lost (a
	// crash); the workers' polling finds what is due.
	Signal(ctx context.Context) error
	// Sweep wakes the runbooks that lost wake-ups missed.
	Sweep(ctx context.Context, limit int) (SweepResult, error)
	// PruneOrphanNotifications deletes up to limit notifications received
	// before receivedBefore for keys that no invocation has, and counts
	// the orphans left.
	PruneOrphanNotifications(ctx context.Context, receivedBefore time.Time, limit int) (pruned, left int64, err error)
	// Prune deletes one batch of what has passed its retention: finished
	// runbooks with everything they own, receipts and ledger rows past
	// their windows; see PruneOptions. Call it until the result is Done.
	Prune(ctx context.Context, o PruneOptions) (Pruned, error)
	// PruneCache deletes up to limit cache entries that expired before
	// now, and says how many it deleted.
	PruneCache(ctx context.Context, now time.Time, limit int) (int64, error)
	// NewListener makes a listener for wake-ups, not yet connected.
	NewListener() Listener
	// Gauges counts the parked steps and the notifications waiting.
	Gauges(ctx context.Context) (parked, inbox int64, err error)

	// The reads of the API.
	Runbook(ctx context.Context, id uuid.UUID) (*Runbook, error)
	RunbookStatus(ctx context.Context, id uuid.UUID) (RunbookState, error)
	// Steps loads a runbook's steps in plan order, without their
	// arguments, and with the results of the steps of page only.
	Steps(ctx context.Context, runbookID uuid.UUID, page StepPage) ([]*Step, error)
	Events(ctx context.Context, runbookID uuid.UUID, afterID int64, limit int) ([]Event, error)
	ListRunbooks(ctx context.Context, q RunbookQuery) (*RunbookPage, error)
	// RunbookCost sums a runbook's attempts.
	RunbookCost(ctx context.Context, id uuid.UUID) (Cost, error)
	// Costs sums attempts by the query's group.
	Costs(ctx context.Context, q CostQuery) ([]Cost, error)
	// TenantBudgets reads tenants' budgets as an advance does, for the
	// day and month of day; a tenant with none set and nothing spent has
	// an empty entry.
	TenantBudgets(ctx context.Context, tenants []string, day time.Time) (map[string]TenantBudget, error)
	// TrustCounts reads a tenant's earned-trust counts for verbs (every
	// verb it has a count for, with verbs nil), by verb; a verb with no
	// row is absent (docs/design/semantics.md section 17).
	TrustCounts(ctx context.Context, tenant string, verbs []string) (map[string]rbtype.TrustCount, error)
	// SetBudgets lists the budgets admins set, of one tenant ("" for
	// every tenant's).
	SetBudgets(ctx context.Context, tenant string) ([]SetBudget, error)
	// ChangeBudget sets (or takes away) one of a tenant's budgets and
	// records the change, who made it and what it replaced, in one
	// transaction; it returns what the budget was before (nil: none set).
	ChangeBudget(ctx context.Context, c BudgetChange) (before *rbtype.Budget, err error)
	Invocation(ctx context.Context, correlationKey string) (Invocation, error)
	// WaitTarget says which step and verb a correlation key's wait is
	// for; ErrNotFound when no step has parked with it (yet).
	WaitTarget(ctx context.Context, correlationKey string) (WaitTarget, error)
	InvocationsOf(ctx context.Context, runbookID uuid.UUID) ([]Invocation, error)
	// Outcomes lists a runbook's outcomes, in the order they were made.
	Outcomes(ctx context.Context, runbookID uuid.UUID) ([]Outcome, error)
	// OutcomesByID reads outcomes by id; ids not found are left out.
	OutcomesByID(ctx context.Context, ids []uuid.UUID) ([]Outcome, error)
	// StepArguments finds a step's arguments by their hash: the step's
	// own when they agree, else those kept when it started again with
	// others; nil when neither has them.
	StepArguments(ctx context.Context, runbookID uuid.UUID, stepKey, hash string) (json.RawMessage, error)

	// Schedules' rows (schedules.go).
	ScheduleStore
	// StepStates loads the steps of several runbooks without their
	// arguments, execution blocks and results, in plan order: what a
	// listing needs to say what each waits on.
	StepStates(ctx context.Context, runbookIDs []uuid.UUID) ([]*Step, error)
	// ActiveInvocations returns the waits still open of several
	// runbooks, with Notified set.
	ActiveInvocations(ctx context.Context, runbookIDs []uuid.UUID) ([]Invocation, error)
	// EventsOfType returns a runbook's events of the given types, oldest
	// first (their Seq is not set).
	EventsOfType(ctx context.Context, runbookID uuid.UUID, types []rbtype.EventType) ([]Event, error)
}

// Tx is one transaction: the operations the advance, the commands and a
// notification's arrival compose. A runbook's state changes only under
// its lock (LockRunbooks), and only through WriteAdvance.
type Tx interface {
	// Commit commits the transaction.
	Commit(ctx context.Context) error
	// Rollback abandons it; after a Commit it does nothing.
	Rollback(ctx context.Context) error

	// LockRunbooks takes the runbooks' advisory locks, in key order, until
	// the transaction ends. Taking a lock the transaction holds is free.
	LockRunbooks(ctx context.Context, ids []uuid.UUID) error
	// TryLockRunbook takes a runbook's lock if it is free, and says
	// whether it did.
	TryLockRunbook(ctx context.Context, id uuid.UUID) (bool, error)

	// LoadForAdvance reads the runbooks' state: the rows, their live
	// steps (or all of them, with AllSteps) with their leases as stored,
	// their active invocations and the notifications received for them.
	// Which leases have ended is the caller's to decide
	// (AdvanceWrite.EndLeases).
	LoadForAdvance(ctx context.Context, ids []uuid.UUID, o LoadOptions) (*AdvanceState, error)
	// WriteAdvance writes everything an advance, a command or a resume
	// changed, and returns the steps it leased.
	WriteAdvance(ctx context.Context, w AdvanceWrite) ([]int64, error)
	// StepDataByKey loads the resolved arguments and results of steps.
	StepDataByKey(ctx context.Context, keys []StepKey) (map[StepKey]StepData, error)
	// Plans loads runbooks' frozen plans.
	Plans(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID][]byte, error)
	// Receipts returns the stored receipts for keys.
	Receipts(ctx context.Context, keys []ReceiptKey) (map[ReceiptKey]Receipt, error)
	// OpenWaitsByKey returns, by idempotency key, the first open wait
	// (not a twin's) under that key: the wait a twin attaches to
	// (docs/design/semantics.md section 16).
	OpenWaitsByKey(ctx context.Context, keys []string) (map[string]Invocation, error)
	// CacheEntries returns the stored cache entries for keys, live or not,
	// by key, for one tenant.
	CacheEntries(ctx context.Context, tenant string, keys []string) (map[string]CacheEntry, error)

	// DerivationKey is the secret key runbook ids and correlation keys
	// are derived under: made at random by the migrations, the same for
	// every daemon on the database, never shown.
	DerivationKey(ctx context.Context) ([]byte, error)

	// CreateRunbook stores a new runbook, due at once, unless one with the
	// same request key exists: then it returns that one, created=false.
	CreateRunbook(ctx context.Context, n NewRunbook) (rb *Runbook, created bool, err error)

	// WaitTarget is Store.WaitTarget inside the transaction.
	WaitTarget(ctx context.Context, correlationKey string) (WaitTarget, error)
	// StoreNotification puts a notification in the inbox unless its key
	// has one already, after taking the locks of o.Lock's runbook (when
	// set) and of the key, and says what the key holds and what waits on
	// it; see StoreOptions for what else it may do in the same round
	// trip.
	StoreNotification(ctx context.Context, n Notification, o StoreOptions) (StoredNotification, error)
	// RollbackToSavepoint undoes what the transaction did since the
	// savepoint StoreNotification set (StoreOptions.Savepoint), locks
	// taken since included.
	RollbackToSavepoint(ctx context.Context) error
	// IgnoreNotifications marks received notifications ignored: the wait
	// they were for has ended.
	IgnoreNotifications(ctx context.Context, ids []int64) error
	// Wake makes runbooks due now; Store.Signal tells the workers once
	// the transaction has committed.
	Wake(ctx context.Context, ids []uuid.UUID) error
	// ReleaseLeases gives up the worker's active leases on steps,
	// returning the attempt each was for.
	ReleaseLeases(ctx context.Context, worker string, stepIDs []int64) (map[int64]int, error)

	// Firing a schedule's tick (schedules.go).
	ScheduleTx
}

// StepPage is the steps a view shows whole: those whose positions are in
// (After, After+Limit].
type StepPage struct {
	After, Limit int
}

// LoadOptions says what LoadForAdvance reads.
type LoadOptions struct {
	// AllSteps reads every step, completed ones too (without their
	// arguments and results): a command that must look at them (a retry
	// refuses a compensated runbook; a regeneration inherits keys).
	AllSteps bool
	// Day is the engine's now: the day and month (UTC) whose spend the
	// runbooks' tenants' budgets are checked against
	// (AdvanceState.Budgets). Zero reads no budgets.
	Day time.Time
	// AllSpend reads the spend of every tenant of the runbooks; without
	// it, only that of tenants with a budget set (rbd budget set), whom
	// nothing else caps when the policy caps no tenant's day or month.
	AllSpend bool
}

// StoreOptions says what StoreNotification does beside the insert, in the
// same round trip.
type StoreOptions struct {
	// Lock is the runbook the key's wait was found in (uuid.Nil when none
	// was): its lock is taken before the key's, the order an advance
	// takes them in.
	Lock uuid.UUID
	// Savepoint sets a savepoint after the insert, for
	// RollbackToSavepoint.
	Savepoint bool
	// Load reads Lock's runbook state after the insert (so that it holds
	// the notification), as LoadForAdvance would with LoadOptions{Day,
	// AllSpend}: StoredNotification.State.
	Load     bool
	Day      time.Time
	AllSpend bool
}

// StoredNotification is what StoreNotification found.
type StoredNotification struct {
	// Inserted: the notification is new, with this ID. Otherwise the key
	// held another, whose payload hash is PayloadHash.
	Inserted    bool
	ID          int64
	PayloadHash string
	// Parked: a step has parked with the key, in RunbookID, and its wait
	// is WaitStatus.
	Parked     bool
	RunbookID  uuid.UUID
	WaitStatus rbtype.InvocationStatus
	// State is the runbook's state, with StoreOptions.Load.
	State *AdvanceState
}

// Listener is one connection that hears wake-ups. It does not reconnect by
// itself: after an error the caller closes it and connects again, and
// sweeps the tables for what was sent while it was away.
type Listener interface {
	// Connect opens the connection and starts listening.
	Connect(ctx context.Context) error
	// WaitForNotification blocks until a wake-up arrives, and returns its
	// payload; an error means the connection is lost (or ctx ended).
	WaitForNotification(ctx context.Context) (string, error)
	// Close closes the connection, if open.
	Close(ctx context.Context) error
}

// SweepResult counts what a sweep found.
type SweepResult struct {
	Inbox    int64 // runbooks woken for waiting notifications
	Ignored  int64 // notifications marked ignored
	Timeouts int64 // runbooks woken for expired parks
	Retries  int64 // runbooks woken for due retries
	// Took is how long each sweep's query ran, by name: inbox, ignore,
	// timeouts, retries. A sweep that slows as parked runbooks
	// pile up is a missing index.
	Took map[string]time.Duration
}

// Total is the number of runbooks woken.
func (r SweepResult) Total() int64 { return r.Inbox + r.Timeouts + r.Retries }

// ViewReader is what a runbook's view reads (Store.ReadView): the
// runbook, its cost, a page of its steps, its invocations and outcomes,
// and its tenant's budgets.
type ViewReader interface {
	// Runbook loads one runbook, its name included.
	Runbook(ctx context.Context, id uuid.UUID) (*Runbook, error)
	// RunbookCost sums a runbook's attempts.
	RunbookCost(ctx context.Context, id uuid.UUID) (Cost, error)
	// Steps loads a runbook's steps in plan order, without their
	// arguments, and with the results of the steps of page only.
	Steps(ctx context.Context, runbookID uuid.UUID, page StepPage) ([]*Step, error)
	// InvocationsOf returns every invocation of a runbook.
	InvocationsOf(ctx context.Context, runbookID uuid.UUID) ([]Invocation, error)
	// Outcomes lists a runbook's outcomes, in the order they were made.
	Outcomes(ctx context.Context, runbookID uuid.UUID) ([]Outcome, error)
	// TenantBudgets reads tenants' budgets as an advance does, for the
	// day and month of day.
	TenantBudgets(ctx context.Context, tenants []string, day time.Time) (map[string]TenantBudget, error)
}
