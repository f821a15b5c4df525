package driver

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
)

// Store is what the runtime needs of its database outside a runbook's
// lock, and the way into a transaction.
type Store interface {
	// InTx runs fn in a transaction, committing when it returns nil and
	// rolling back otherwise. fn must not keep the Tx.
	InTx(ctx context.Context, fn func(Tx) error) error

	// ClaimDue hands out up to limit runbooks whose wake-up has passed
	// and pushes their wake-up claimFor ahead.
	ClaimDue(ctx context.Context, limit int, claimFor time.Duration) ([]uuid.UUID, error)
	// RenewLeases extends the worker's active leases, returning the steps
	// it still held.
	RenewLeases(ctx context.Context, worker string, expiresAt time.Time, stepIDs []int64) ([]int64, error)
	// WorkerLeases lists the worker's active leases.
	WorkerLeases(ctx context.Context, worker string) ([]Lease, error)
	// InsertNotification stores a notification in the inbox, idempotently
	// on its correlation key, and wakes the runbook waiting for it.
	InsertNotification(ctx context.Context, n Notification) (rbtype.InboxResult, error)
	// InsertNotificationResuming is InsertNotification that first hands
	// the wait the key ends (if a step parked with it) to check, with the
	// transaction (no lock taken yet), whose
	// error refuses the notification with nothing stored; and, when the
	// notification is accepted for an active wait, hands resume the
	// transaction (holding the runbook's lock, inside a savepoint) to
	// advance the runbook in place. If resume fails its work is undone
	// and the runbook is woken instead; the notification is kept either
	// way. resumed says whether resume's work committed. Either function
	// may be nil.
	InsertNotificationResuming(ctx context.Context, n Notification, check func(Tx, WaitTarget) error, resume func(Tx, uuid.UUID) error) (result rbtype.InboxResult, resumed bool, err error)
	// Sweep wakes the runbooks that lost wake-ups missed.
	Sweep(ctx context.Context, limit int) (SweepResult, error)
	// PruneOrphanNotifications deletes up to limit notifications received
	// before receivedBefore for keys that no invocation has, and counts
	// the orphans left.
	PruneOrphanNotifications(ctx context.Context, receivedBefore time.Time, limit int) (pruned, left int64, err error)
	// PruneCache deletes up to limit cache entries that expired before
	// now, and says how many it deleted.
	PruneCache(ctx context.Context, now time.Time, limit int) (int64, error)
	// NewListener makes a listener for wake-ups; Run starts it.
	NewListener(cfg ListenConfig) Listener
	// Gauges counts the parked steps and the notifications waiting.
	Gauges(ctx context.Context) (parked, inbox int64, err error)

	// The reads of the API.
	Runbook(ctx context.Context, id uuid.UUID) (*Runbook, error)
	RunbookStatus(ctx context.Context, id uuid.UUID) (RunbookState, error)
	Steps(ctx context.Context, runbookID uuid.UUID) ([]*Step, error)
	Events(ctx context.Context, runbookID uuid.UUID, afterID int64, limit int) ([]Event, error)
	ListRunbooks(ctx context.Context, q RunbookQuery) (*RunbookPage, error)
	// RunbookCost sums a runbook's attempts.
	RunbookCost(ctx context.Context, id uuid.UUID) (Cost, error)
	// Costs sums attempts by the query's group.
	Costs(ctx context.Context, q CostQuery) ([]Cost, error)
	Invocation(ctx context.Context, correlationKey string) (Invocation, error)
	// WaitTarget says which step and verb a correlation key's wait is
	// for; ErrNotFound when no step has parked with it (yet).
	WaitTarget(ctx context.Context, correlationKey string) (WaitTarget, error)
	InvocationsOf(ctx context.Context, runbookID uuid.UUID) ([]Invocation, error)
}

// Tx is one transaction: the operations the advance and the API's writes
// use. A runbook's state changes only under its lock (LockRunbooks).
type Tx interface {
	// LockRunbooks takes the runbooks' advisory locks, in key order, until
	// the transaction ends.
	LockRunbooks(ctx context.Context, ids []uuid.UUID) error

	// LoadForAdvance reads the runbooks' state. Of the steps' leases, it
	// releases the worker's on the attempts whose outcomes it brings (a
	// lease for another attempt of the step stays) and ends those that
	// expired, both when the advance is written (WriteAdvance), and
	// reports the rest as Leases.
	LoadForAdvance(ctx context.Context, ids []uuid.UUID, worker string, release []LeaseRequest, now time.Time) (*AdvanceState, error)
	// WriteAdvance writes an advance's changes and returns the steps it
	// leased.
	WriteAdvance(ctx context.Context, w AdvanceWrite) ([]int64, error)
	// StepDataByKey loads the resolved arguments and results of steps.
	StepDataByKey(ctx context.Context, keys []StepKey) (map[StepKey]StepData, error)
	// Plans loads runbooks' frozen plans.
	Plans(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID][]byte, error)
	// Receipts returns the stored receipts for keys.
	Receipts(ctx context.Context, keys []ReceiptKey) (map[ReceiptKey]Receipt, error)
	// CacheEntries returns the stored cache entries for keys, live or not,
	// by key, for one tenant.
	CacheEntries(ctx context.Context, tenant string, keys []string) (map[string]CacheEntry, error)

	// CreateRunbook stores a new runbook, due at once, unless one with the
	// same request key exists: then it returns that one, created=false.
	CreateRunbook(ctx context.Context, n NewRunbook) (rb *Runbook, created bool, err error)
	// Runbook and Steps read one runbook and its steps under its lock.
	Runbook(ctx context.Context, id uuid.UUID) (*Runbook, error)
	Steps(ctx context.Context, runbookID uuid.UUID) ([]*Step, error)
	// ActiveInvocations lists the runbooks' active invocations.
	ActiveInvocations(ctx context.Context, runbookIDs []uuid.UUID) ([]Invocation, error)
	// ApplyChange writes a change made outside an advance: a gate's
	// decision, a cancellation, an extension.
	ApplyChange(ctx context.Context, c Change) error
	// Wake makes runbooks due now and signals the workers.
	Wake(ctx context.Context, ids []uuid.UUID) error
	// ReleaseLeases gives up the worker's active leases on steps,
	// returning the attempt each was for.
	ReleaseLeases(ctx context.Context, worker string, stepIDs []int64) (map[int64]int, error)
}

// Change is what a decision, a cancellation or an extension writes to one
// runbook, under its lock, in one round trip.
type Change struct {
	RunbookID uuid.UUID
	// Finish ends invocations with a status.
	Finish       []uuid.UUID
	FinishStatus rbtype.InvocationStatus
	// Invocations updates active waits (a heartbeat's new timeout).
	Invocations []InvocationUpdate
	Steps       []StepChange
	NewSteps    []NewStep
	NewEdges    []Edge
	Events      []Event
	Mutations   []Mutation
	Runbook     *RunbookChange
	// Wake makes the runbook due now and signals the workers.
	Wake bool
}

// Listener holds a connection that hears wake-ups and reconnects after it
// drops, until Run's context ends.
type Listener interface {
	Run(ctx context.Context) error
}

// ListenConfig says what to do with what a listener hears.
type ListenConfig struct {
	// OnNotify receives each wake-up's payload. It must not block for
	// long: the listener reads the next after it returns.
	OnNotify func(payload string)
	// OnConnect runs after every (re)connection, once listening. Wake-ups
	// sent while the listener was away are lost to it, so on a
	// reconnection (reconnected=true) the caller must sweep the tables.
	OnConnect func(reconnected bool)
	// MaxBackoff bounds the wait between reconnection attempts; zero means
	// 5 seconds.
	MaxBackoff time.Duration
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
