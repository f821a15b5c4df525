package runtime

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/durable"
)

// Store is what the runtime needs of the database. durable.Store is the
// implementation; the runtime's logic speaks in these operations and never
// in SQL. A transaction's operations are those of *durable.Tx.
type Store interface {
	InTx(ctx context.Context, fn func(*durable.Tx) error) error
	ClaimDue(ctx context.Context, limit int, claimFor time.Duration) ([]uuid.UUID, error)
	RenewLeases(ctx context.Context, worker string, expiresAt time.Time, stepIDs []int64) ([]int64, error)
	WorkerLeases(ctx context.Context, worker string) ([]durable.Lease, error)
	InsertNotification(ctx context.Context, n durable.Notification) (durable.InboxResult, error)
	Sweep(ctx context.Context, limit int) (durable.SweepResult, error)
	NewListener(cfg durable.ListenConfig) *durable.Listener
	Runbook(ctx context.Context, id uuid.UUID) (*durable.Runbook, error)
	RunbookStatus(ctx context.Context, id uuid.UUID) (status string, finished bool, err error)
	Steps(ctx context.Context, runbookID uuid.UUID) ([]*durable.Step, error)
	Events(ctx context.Context, runbookID uuid.UUID, afterID int64, limit int) ([]durable.Event, error)
	ListRunbooks(ctx context.Context, status string, limit int, after string) (*durable.RunbookPage, error)
	Invocation(ctx context.Context, correlationKey string) (durable.Invocation, error)
	InvocationsOf(ctx context.Context, runbookID uuid.UUID) ([]durable.Invocation, error)
}

var _ Store = (*durable.Store)(nil)
