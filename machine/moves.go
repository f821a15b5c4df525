package machine

import (
	"fmt"
	"slices"

	"github.com/runbookdev/runbook/rbtype"
)

// The moves a status may make, as the state diagrams of
// docs/design/runtime.md ("States") draw them. Every change of a step's or
// a runbook's status goes through moveStep or moveRunbook, which refuse a
// move these tables lack; moves_test.go holds the tables to the diagrams,
// so a move the code makes and the page does not draw fails the tests
// rather than reaching a user.
var stepMoves = map[rbtype.StepStatus][]rbtype.StepStatus{
	// On its own: predecessors, handler, clock, the outside world.
	rbtype.StepPending:         {rbtype.StepReady, rbtype.StepSkipped, rbtype.StepFailed, rbtype.StepComplete},
	rbtype.StepReady:           {rbtype.StepWaitingApproval, rbtype.StepRunning, rbtype.StepComplete, rbtype.StepFailed, rbtype.StepFailedRetryable},
	rbtype.StepWaitingApproval: {rbtype.StepReady, rbtype.StepFailed},
	rbtype.StepRunning:         {rbtype.StepComplete, rbtype.StepParked, rbtype.StepFailedRetryable, rbtype.StepFailed, rbtype.StepReady, rbtype.StepInDoubt},
	rbtype.StepInDoubt:         {rbtype.StepComplete, rbtype.StepPending, rbtype.StepFailed, rbtype.StepFailedRetryable, rbtype.StepCancelled},
	rbtype.StepFailedRetryable: {rbtype.StepReady},
	rbtype.StepParked:          {rbtype.StepParked, rbtype.StepComplete, rbtype.StepFailedRetryable, rbtype.StepFailed, rbtype.StepEscalated},
	// A person's command: retry, resolve.
	rbtype.StepComplete:  {rbtype.StepPending}, // a for-each's template, reopened by a retried iteration
	rbtype.StepFailed:    {rbtype.StepPending},
	rbtype.StepSkipped:   {rbtype.StepPending},
	rbtype.StepCancelled: {rbtype.StepPending},
	rbtype.StepEscalated: {rbtype.StepPending, rbtype.StepComplete, rbtype.StepFailed},
}

// notStarted are the statuses the cancel-and-abort diagram groups as "not
// started": an abort skips them, a cancel cancels them.
var notStarted = []rbtype.StepStatus{rbtype.StepPending, rbtype.StepReady, rbtype.StepWaitingApproval, rbtype.StepFailedRetryable}

func init() {
	for _, from := range notStarted {
		stepMoves[from] = append(stepMoves[from], rbtype.StepSkipped, rbtype.StepCancelled)
	}
	stepMoves[rbtype.StepRunning] = append(stepMoves[rbtype.StepRunning], rbtype.StepCancelled)
	stepMoves[rbtype.StepParked] = append(stepMoves[rbtype.StepParked], rbtype.StepCancelled)
}

// runbookMoves are the runbook's, from its two diagrams: its own course and
// a person's retry or resolve.
var runbookMoves = map[rbtype.RunbookStatus][]rbtype.RunbookStatus{
	rbtype.RunbookInProgress: {rbtype.RunbookInProgress, rbtype.RunbookExecuting, rbtype.RunbookCancelled},
	rbtype.RunbookExecuting:  {rbtype.RunbookExecuting, rbtype.RunbookComplete, rbtype.RunbookFailed, rbtype.RunbookEscalated, rbtype.RunbookPartial, rbtype.RunbookCancelled},
	rbtype.RunbookFailed:     {rbtype.RunbookExecuting},
	rbtype.RunbookPartial:    {rbtype.RunbookExecuting},
	rbtype.RunbookEscalated:  {rbtype.RunbookExecuting, rbtype.RunbookCancelled},
	rbtype.RunbookComplete:   {rbtype.RunbookExecuting},
}

// StepMoveAllowed reports whether the diagrams let a step go from one
// status to another.
func StepMoveAllowed(from, to rbtype.StepStatus) bool {
	return slices.Contains(stepMoves[from], to)
}

// RunbookMoveAllowed reports whether the diagrams let a runbook go from
// one status to another.
func RunbookMoveAllowed(from, to rbtype.RunbookStatus) bool {
	return slices.Contains(runbookMoves[from], to)
}

// moveStep sets a step's status, the one way the machine changes it
// (staying in a status is no move). A move the diagrams lack is a bug in the machine: it abandons the
// transaction (t.err) instead of writing a state no reader expects.
func (t *transition) moveStep(s *rbtype.Step, to rbtype.StepStatus) {
	if s.Status != to && !StepMoveAllowed(s.Status, to) && t.err == nil {
		t.err = fmt.Errorf("runbook %s: step %s cannot move from %s to %s (docs/design/runtime.md, States)", t.Rb.ID, s.Key, s.Status, to)
	}
	s.Status = to
	t.touch(s)
}

// moveRunbook sets the runbook's status in memory, guarded as moveStep is;
// the caller records the change to write (runbookChange).
func (t *transition) moveRunbook(to rbtype.RunbookStatus) {
	if t.Rb.Status != to && !RunbookMoveAllowed(t.Rb.Status, to) && t.err == nil {
		t.err = fmt.Errorf("runbook %s cannot move from %s to %s (docs/design/runtime.md, States)", t.Rb.ID, t.Rb.Status, to)
	}
	t.Rb.Status = to
}
