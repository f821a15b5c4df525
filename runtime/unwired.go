package runtime

import (
	"fmt"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
)

// unwired refuses a plan that uses a form of the language this engine
// compiles but does not run yet (docs/language.md, v1.4): a gate that depends on data or names its approvers, a wait's default
// or reminder, a call's :parallel. Running such
// a plan would ignore the form: a gate meant for compliance officers
// would open to any token, a "revoke when the review failed" would never
// run. Refusing it at the door, on every way in (admit), keeps the
// promise that what a runbook says is what it does.
func unwired(plan *compiler.Plan, steps []*compiler.Step) error {
	for _, s := range steps {
		switch {
		case s.Parallel > 0:
			return notYet(s.Key, "a call's :parallel")
		}
	}
	return nil
}

func notYet(step, form string) error {
	return fmt.Errorf("%w: step %q uses %s, which this daemon compiles but does not run yet; "+
		"leave it out, or run the plan on a daemon that runs it (docs/language.md, v1.4)", rbtype.ErrInvalid, step, form)
}
