package runtime

import (
	"context"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
)

// BuiltinHandler exposes a registered handler to tests.
func BuiltinHandler(h *Handlers, name string) Handler {
	impl, _ := h.lookup(name)
	return impl
}

// CorrelationKeyForTest is the correlation key the engine will give an
// attempt of a step of a runbook when it parks: what only the daemon, with
// the database's derivation key, can work out. A test uses it to be first
// with a key, as a sender who had learnt it would.
func CorrelationKeyForTest(ctx context.Context, e *Engine, runbookID uuid.UUID, step string, attempt int) (string, error) {
	var key string
	err := inTx(ctx, e.store, func(tx driver.Tx) error {
		d, err := e.derivationIn(ctx, tx)
		if err == nil {
			_, key = d.InvocationIDs(runbookID, step, attempt)
		}
		return err
	})
	return key, err
}

// RunbookIDForTest is the id the engine gives the runbook a tenant submits
// under a request key (an Idempotency-Key, or another key the engine
// makes, such as a schedule's tick's): what only the daemon, with the
// database's derivation key, can work out.
func RunbookIDForTest(ctx context.Context, e *Engine, tenant, key string) (uuid.UUID, error) {
	var id uuid.UUID
	err := inTx(ctx, e.store, func(tx driver.Tx) error {
		d, err := e.derivationIn(ctx, tx)
		if err == nil {
			id = d.RunbookID(tenantKey(tenant, key))
		}
		return err
	})
	return id, err
}
