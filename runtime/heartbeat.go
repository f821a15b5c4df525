package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Heartbeat records that the external work a parked step waits for goes
// on: the wait's timeout moves to now + extend (an ISO 8601 duration),
// never back and never past parked_at + the verb's timeouts.max_park
// (docs/design/semantics.md section 8). It is not the completion: the key may still
// complete or fail later. It returns the new timeout.
func (e *Engine) Heartbeat(ctx context.Context, correlationKey, extend string) (time.Time, error) {
	if extend == "" {
		return time.Time{}, fmt.Errorf("%w: a heartbeat needs \"extend\", an ISO 8601 duration such as P3D", rbtype.ErrInvalid)
	}
	ext, err := verbs.ParseDuration(extend)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: extend: %v", rbtype.ErrInvalid, err)
	}
	if target, err := e.store.WaitTarget(ctx, correlationKey); err == nil && !sees(ctx, target.Tenant) {
		return time.Time{}, noWait(correlationKey) // another tenant's, said as no wait at all
	}
	inv, err := e.store.Invocation(ctx, correlationKey)
	if errors.Is(err, driver.ErrNotFound) {
		return time.Time{}, noWait(correlationKey)
	}
	if err != nil {
		return time.Time{}, err
	}
	c := &machine.Heartbeat{Key: correlationKey, Extend: ext}
	if err := e.runCommand(ctx, inv.RunbookID, c); err != nil {
		return time.Time{}, err
	}
	return c.Timeout, nil
}
