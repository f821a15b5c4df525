package runtime

import (
	"context"

	"github.com/runbookdev/runbook/driver"
)

type replicaKey struct{}

// WithReplica marks ctx as a read that may be served from the engine's
// ReadStore, a standby: the caller has made sure the standby has
// replayed the client's own last write (docs/scaling.md, "Reads from a
// standby"). Only the views read through it (a runbook's view, events,
// plan and steps, lists, outcomes, costs); whatever writes, and the
// advance, always uses the primary.
func WithReplica(ctx context.Context) context.Context {
	return context.WithValue(ctx, replicaKey{}, true)
}

// reader is the store a view reads from: the standby when ctx was marked
// by WithReplica and there is one, the primary otherwise.
func (e *Engine) reader(ctx context.Context) driver.Store {
	if e.cfg.ReadStore != nil && ctx.Value(replicaKey{}) != nil {
		return e.cfg.ReadStore
	}
	return e.store
}
