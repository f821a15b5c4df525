package runtime

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
)

// runCommand applies cmd to one runbook in a transaction of its own: the
// runbook's lock, its load (every step: a command may look at completed
// ones), a round with the command, the write, the commit. The steps the
// round readies start at once when this engine's worker is there to run
// them and a place among the in-place resumers is free; otherwise they
// are left ready and the workers are signalled (inputs.hold).
func (e *Engine) runCommand(ctx context.Context, id uuid.UUID, cmd machine.Command) error {
	_, err := e.runCommandThen(ctx, id, cmd)
	return err
}

// runCommandThen is runCommand that also returns the round, settled, for
// the caller to read what the command found (the spans of a cancel).
func (e *Engine) runCommandThen(ctx context.Context, id uuid.UUID, cmd machine.Command) (*machine.Round, error) {
	calls := e.working.Load()
	hold := calls == nil || !e.takeResumer()
	if !hold {
		defer func() { <-e.resumers }()
	}
	var done advanced
	err := inTx(ctx, e.store, func(tx driver.Tx) (err error) {
		done, err = e.advanceIn(ctx, tx, []uuid.UUID{id}, machine.Inputs{Commands: map[uuid.UUID]machine.Command{id: cmd}, Hold: hold}, nil)
		return err
	})
	if errors.Is(err, driver.ErrNotFound) {
		return nil, e.noRunbook(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	e.committed(ctx, done)
	for _, pc := range done.calls {
		go e.startCall(*calls, pc)
	}
	return done.settled, nil
}
