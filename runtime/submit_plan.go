package runtime

import (
	"context"
	"fmt"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/machine"
	"github.com/runbookdev/runbook/rbtype"
)

// SubmitPlan reads a plan compiled elsewhere, checks it against the
// engine's catalogue and submits it. A plan is data anyone holding a
// token can write, and its hash anyone can recompute; so its execution
// blocks, which choose the handler, its static params (and the
// ${env:...} they read), its side effects and its gate, must be the ones
// this daemon's catalogue holds (compiler.ReadPlan, docs/design/semantics.md section
// 9). A plan that fails the check is a *CompileError carrying the
// diagnostics, which point into raw under filename.
//
// A daemon without a catalogue has nothing to check a plan against, and
// so refuses plans as it refuses sources.
func (e *Engine) SubmitPlan(ctx context.Context, filename string, raw []byte, s Submission) (*apitype.Submitted, error) {
	if e.cfg.Catalogue == nil {
		return nil, fmt.Errorf("%w: this daemon has no verb catalogue to check plans against (start it with --verbs)", rbtype.ErrInvalid)
	}
	if err := machine.CheckPlanBytes(e.cfg.Limits, raw); err != nil {
		return nil, err // before it is decoded: the stored form is about as large
	}
	if err := planOutsideScope(ctx, raw); err != nil {
		return nil, err
	}
	plan, diags := compiler.ReadPlan(filename, raw, e.cfg.Catalogue)
	if diags.HasErrors() {
		return nil, &CompileError{Diagnostics: diags}
	}
	s.Plan = plan
	return e.Submit(ctx, s)
}
