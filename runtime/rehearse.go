package runtime

import (
	"context"
	"encoding/json"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// rehearse dry-runs a call and has its rehearsal check what the dry run
// returned (docs/design/semantics.md, execution levels). It returns an
// error to end the attempt with (the dry run's own failure, or
// VERIFY_FAILED), nil to go on to the commit.
func rehearse(ctx context.Context, r *machine.Rehearsal, h handler.Handler, c *handler.Call) (*machine.Rehearsed, error) {
	args, err := json.Marshal(c.Args)
	if err != nil {
		return nil, err
	}
	seen := &machine.Rehearsed{Level: r.Level(), ArgsHash: machine.HashJSON(args)}
	dr, can := h.(handler.DryRunner)
	if !can {
		return seen, nil // guarded: straight to the commit (full needs a dry run: V031)
	}
	dry := *c
	dry.DryRun = true
	res, err := dr.DryRun(ctx, &dry)
	if err != nil {
		return seen, err
	}
	value, err := machine.MarshalResult(res.Value())
	if err != nil {
		seen.Ran = true
		return seen, handler.Errorf(rbtype.CodeInternal, "the dry run's result cannot be encoded: %v", err)
	}
	return seen, r.Check(seen, value)
}
