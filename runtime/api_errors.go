package runtime

import (
	"errors"
	"fmt"

	"github.com/runbookdev/runbook/lang"
)

// Errors the API reports; callers test with errors.Is.
var (
	// ErrNotFound: no such runbook or step.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request does not fit the runbook's state (approving
	// a step that does not wait for approval, extending a finished
	// runbook).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request itself is wrong (bad inputs, bad mode).
	ErrInvalid = errors.New("invalid request")
	// ErrSchema: a value in a well-formed request does not fit the schema
	// it will be checked against later (an input against the arguments
	// it feeds, a notification's result against the parked verb's
	// output_schema). Refused at the door, nothing stored, so the sender
	// can fix it and send again.
	ErrSchema = errors.New("does not match its schema")
)

// CompileError carries the diagnostics of a source that did not compile,
// or of a submitted plan that this daemon refuses.
type CompileError struct {
	Diagnostics lang.Diagnostics
}

func (e *CompileError) Error() string {
	n, _ := e.Diagnostics.Count()
	return fmt.Sprintf("the source has %d errors", n)
}
