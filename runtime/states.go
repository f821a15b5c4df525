package runtime

// Step statuses (RUNTIME.md).
const (
	StepPending         = "pending"
	StepReady           = "ready"
	StepWaitingApproval = "waiting_approval"
	StepRunning         = "running"
	StepParked          = "parked"
	StepFailedRetryable = "failed_retryable"
	StepComplete        = "complete"
	StepFailed          = "failed"
	StepSkipped         = "skipped"
	StepCancelled       = "cancelled"
	StepEscalated       = "escalated"
)

// Runbook statuses.
const (
	RunbookExecuting = "executing"
	RunbookComplete  = "complete"
	RunbookFailed    = "failed"
	RunbookCancelled = "cancelled"
	RunbookEscalated = "escalated"
)

// runbookStatuses are every runbook status, for checking a list filter.
var runbookStatuses = []string{RunbookExecuting, RunbookComplete, RunbookFailed, RunbookCancelled, RunbookEscalated}

// Modes.
const (
	ModeExecute = "execute"
	ModeDryRun  = "dry_run"
)

// Compensation statuses of a completed step.
const (
	compensationPending  = "pending"
	compensationRunning  = "running"
	compensationComplete = "complete"
	compensationFailed   = "failed"
)

// Event types (RUNTIME.md), plus RUNBOOK_ESCALATED.
const (
	EventRunbookSubmitted      = "RUNBOOK_SUBMITTED"
	EventStepReady             = "STEP_READY"
	EventStepStarted           = "STEP_STARTED"
	EventStepSucceeded         = "STEP_SUCCEEDED"
	EventStepFailed            = "STEP_FAILED"
	EventStepRetryScheduled    = "STEP_RETRY_SCHEDULED"
	EventStepParked            = "STEP_PARKED"
	EventStepResumed           = "STEP_RESUMED"
	EventStepTimedOut          = "STEP_TIMED_OUT"
	EventGateRequested         = "GATE_REQUESTED"
	EventGateApproved          = "GATE_APPROVED"
	EventGateRejected          = "GATE_REJECTED"
	EventStepCancelled         = "STEP_CANCELLED"
	EventStepSkipped           = "STEP_SKIPPED"
	EventCompensationStarted   = "COMPENSATION_STARTED"
	EventCompensationSucceeded = "COMPENSATION_SUCCEEDED"
	EventCompensationFailed    = "COMPENSATION_FAILED"
	EventRunbookExtended       = "RUNBOOK_EXTENDED"
	EventRunbookCompleted      = "RUNBOOK_COMPLETED"
	EventRunbookFailed         = "RUNBOOK_FAILED"
	EventRunbookCancelled      = "RUNBOOK_CANCELLED"
	// EventRunbookEscalated ends a runbook whose failure was handed to a
	// person (a park timeout with on_timeout: escalate). RUNTIME.md lists
	// the status but no event for it.
	EventRunbookEscalated = "RUNBOOK_ESCALATED"
)

// stepDone reports whether a step's status is final.
func stepDone(status string) bool {
	switch status {
	case StepComplete, StepFailed, StepSkipped, StepCancelled, StepEscalated:
		return true
	}
	return false
}

// blocksDependents reports whether a final status means dependents can
// never run.
func blocksDependents(status string) bool {
	return status == StepFailed || status == StepSkipped || status == StepCancelled || status == StepEscalated
}
