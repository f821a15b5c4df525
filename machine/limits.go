package machine

import (
	"errors"
	"fmt"
)

// Limits bound what one runbook may hold, so that no request can make the
// daemon hold more than an operator planned for (docs/reliability.md: one 920 KB
// submission made 115,000 steps and took the daemon from 385 MB to
// 2.26 GB). Zero values take the defaults shown; docs/daemon.md lists
// them with their flags.
type Limits struct {
	// MaxSteps bounds a runbook's steps, counted after every way it
	// grows: its submission, each extension, and each expansion of a
	// for-each at run time (10,000; --max-steps).
	MaxSteps int
	// MaxSourceBytes bounds a submitted or extending source (256 KiB;
	// --max-source-bytes).
	MaxSourceBytes int
	// MaxPlanBytes bounds a runbook's frozen plan as stored, submitted
	// whole, compiled from a source, or grown by an extension (8 MiB;
	// --max-plan-bytes).
	MaxPlanBytes int
}

// The default limits.
const (
	DefaultMaxSteps       = 10_000
	DefaultMaxSourceBytes = 256 << 10
	DefaultMaxPlanBytes   = 8 << 20
)

// Defaults fills the limits left zero with the daemon's defaults.
func (l *Limits) Defaults() {
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultMaxSteps
	}
	if l.MaxSourceBytes <= 0 {
		l.MaxSourceBytes = DefaultMaxSourceBytes
	}
	if l.MaxPlanBytes <= 0 {
		l.MaxPlanBytes = DefaultMaxPlanBytes
	}
}

// ErrLimit: a request would take a runbook past one of its limits. The
// error is a *LimitError, which says which.
var ErrLimit = errors.New("over a limit")

// LimitError is a request refused for going past a limit: nothing is
// stored.
type LimitError struct {
	// Name is the limit's flag, without dashes: max-steps,
	// max-source-bytes, max-plan-bytes.
	Name string
	// Max is the limit, and Got what the request would have made.
	Max, Got int
	// What says what was counted, with %d for Got ("the runbook would
	// have %d steps").
	What string
}

// Error says which limit the request went past, and by how much.
func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s; --%s allows %d", ErrLimit, fmt.Sprintf(e.What, e.Got), e.Name, e.Max)
}

// Unwrap makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Unwrap() error { return ErrLimit }

// CheckSteps refuses a runbook that would have more steps than the limit.
// Every way a runbook grows calls it with its new total: a submission, an
// extension (in the state machine, transition.admitSteps), and an
// expansion at run time.
func CheckSteps(l Limits, total int) error {
	if total > l.MaxSteps {
		return &LimitError{Name: "max-steps", Max: l.MaxSteps, Got: total, What: "the runbook would have %d steps"}
	}
	return nil
}

// CheckSourceBytes refuses a source over the limit, before it is compiled.
func CheckSourceBytes(l Limits, source []byte) error {
	if len(source) > l.MaxSourceBytes {
		return &LimitError{Name: "max-source-bytes", Max: l.MaxSourceBytes, Got: len(source), What: "the source is %d bytes"}
	}
	return nil
}

// CheckPlanBytes refuses a plan whose stored form is over the limit.
func CheckPlanBytes(l Limits, plan []byte) error {
	if len(plan) > l.MaxPlanBytes {
		return &LimitError{Name: "max-plan-bytes", Max: l.MaxPlanBytes, Got: len(plan), What: "the plan would be %d bytes"}
	}
	return nil
}

// admitSteps checks, in the state machine, that adding steps keeps the
// runbook within the step limit. Its plan holds every step it has, those
// of extensions included: an extension and an expansion at run time both
// ask here before they add any.
func (t *transition) admitSteps(adding int) error {
	return CheckSteps(t.m.Limits, len(t.plan.Plan.Steps)+adding)
}
