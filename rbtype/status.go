package rbtype

// StepStatus is the state of one step (docs/design/runtime.md, "Step states").
type StepStatus string

// The step statuses.
const (
	StepPending         StepStatus = "pending"
	StepReady           StepStatus = "ready"
	StepWaitingApproval StepStatus = "waiting_approval"
	StepRunning         StepStatus = "running"
	StepParked          StepStatus = "parked"
	StepFailedRetryable StepStatus = "failed_retryable"
	StepComplete        StepStatus = "complete"
	StepFailed          StepStatus = "failed"
	StepSkipped         StepStatus = "skipped"
	StepCancelled       StepStatus = "cancelled"
	StepEscalated       StepStatus = "escalated"
	// StepInDoubt: a call to a provider that ignores idempotency keys
	// (provider_dedupes: false) was cut off (its lease reclaimed) with no
	// receipt: whether its effect happened is unknown, so it is not
	// called again; a person resolves it (docs/design/semantics.md
	// section 16). Not final: its runbook waits for the person.
	StepInDoubt StepStatus = "in_doubt"
)

// StepStatuses lists every step status, in the order docs/design/runtime.md gives.
var StepStatuses = []StepStatus{
	StepPending, StepReady, StepWaitingApproval, StepRunning, StepParked, StepFailedRetryable,
	StepComplete, StepFailed, StepSkipped, StepCancelled, StepEscalated, StepInDoubt,
}

// Done reports whether the status is final: nothing more happens to the
// step.
func (s StepStatus) Done() bool {
	switch s {
	case StepComplete, StepFailed, StepSkipped, StepCancelled, StepEscalated:
		return true
	}
	return false
}

// BlocksDependents reports whether a final status means the steps that
// depend on this one can never run.
func (s StepStatus) BlocksDependents() bool {
	switch s {
	case StepFailed, StepSkipped, StepCancelled, StepEscalated:
		return true
	}
	return false
}

// RunbookStatus is the state of a runbook.
type RunbookStatus string

// The runbook statuses.
const (
	RunbookExecuting RunbookStatus = "executing"
	RunbookComplete  RunbookStatus = "complete"
	RunbookFailed    RunbookStatus = "failed"
	RunbookCancelled RunbookStatus = "cancelled"
	RunbookEscalated RunbookStatus = "escalated"
	// RunbookPartial: finished, with steps that failed under
	// on_failure: continue and nothing else failed.
	RunbookPartial RunbookStatus = "partial"
	// RunbookInProgress: held open (submitted with hold_open) while an
	// agent still adds steps; it does not finish when its steps do, only
	// after it is closed.
	RunbookInProgress RunbookStatus = "in_progress"
)

// Running reports whether the runbook still advances its steps:
// executing, or held open.
func (s RunbookStatus) Running() bool { return s == RunbookExecuting || s == RunbookInProgress }

// Compensates reports whether a runbook in this status undoes its
// completed steps: a failed one, and a cancelled one (unless its cancel
// said not to, in which case none was marked to undo).
func (s RunbookStatus) Compensates() bool { return s == RunbookFailed || s == RunbookCancelled }

// RunbookStatuses lists every runbook status.
var RunbookStatuses = []RunbookStatus{RunbookExecuting, RunbookComplete, RunbookFailed, RunbookCancelled, RunbookEscalated, RunbookPartial, RunbookInProgress}

// RunbookState refines an executing runbook in views: what it waits for
// when nothing can move without the outside world.
type RunbookState string

// The refined states; otherwise a view's state is its status.
const (
	StateParked           RunbookState = "parked"
	StateAwaitingApproval RunbookState = "awaiting_approval"
	// StateHeldOpen: a runbook held open whose steps have all ended; it
	// waits for its agent to extend or close it.
	StateHeldOpen RunbookState = "held_open"
	// StateInDoubt: a step's call may have happened, to a provider that
	// ignores idempotency keys, and nothing else moves: the runbook waits
	// for a person to resolve the step (docs/design/semantics.md section
	// 16).
	StateInDoubt RunbookState = "in_doubt"
)

// Mode is how a runbook was submitted to run.
type Mode string

// The modes.
const (
	ModeExecute Mode = "execute"
	ModeDryRun  Mode = "dry_run"
	// ModeDraftOnly runs everything but the steps whose side effects reach
	// the outside world (external_call, human_process): those end skipped
	// with DRAFT_ONLY, for a person to review the drafts first
	// (docs/design/semantics.md section 7).
	ModeDraftOnly Mode = "draft_only"
)

// Modes lists every mode.
var Modes = []Mode{ModeExecute, ModeDryRun, ModeDraftOnly}

// CompensationStatus is the state of a completed step's undoing; empty
// when there is none to do.
type CompensationStatus string

// The compensation statuses.
const (
	CompensationNone     CompensationStatus = ""
	CompensationPending  CompensationStatus = "pending"
	CompensationRunning  CompensationStatus = "running"
	CompensationComplete CompensationStatus = "complete"
	CompensationFailed   CompensationStatus = "failed"
	// CompensationSkipped: a draft_only runbook did not run it, its verb
	// reaching outside (DRAFT_ONLY, docs/daemon.md).
	CompensationSkipped CompensationStatus = "skipped"
)

// Due reports whether the compensation is still to run or running.
func (c CompensationStatus) Due() bool { return c == CompensationPending || c == CompensationRunning }

// EscalationStatus is the state of an escalating wait's escalation verb
// (docs/design/semantics.md section 8): the same states as a compensation's, empty
// when there is none to run.
type EscalationStatus = CompensationStatus

// GateDecision is what a person decided at a gate; empty until someone
// did.
type GateDecision string

// The gate decisions.
const (
	GateUndecided GateDecision = ""
	GateApproved  GateDecision = "approved"
	GateRejected  GateDecision = "rejected"
)

// InvocationStatus is the state of a durable step's wait.
type InvocationStatus string

// The invocation statuses (docs/design/runtime.md, invocation_records).
const (
	InvocationActive    InvocationStatus = "active"
	InvocationCompleted InvocationStatus = "completed"
	InvocationTimedOut  InvocationStatus = "timed_out"
	InvocationCancelled InvocationStatus = "cancelled"
)

// NotificationOutcome is what a notification reports of the external work.
type NotificationOutcome string

// The outcomes a notification may report.
const (
	OutcomeCompleted NotificationOutcome = "completed"
	OutcomeFailed    NotificationOutcome = "failed"
	// OutcomeHeartbeat is not an outcome: the work goes on, and the wait's
	// timeout moves forward (docs/design/semantics.md section 8).
	OutcomeHeartbeat NotificationOutcome = "heartbeat"
)

// NotificationStatus is the state of a notification in the inbox.
type NotificationStatus string

// The inbox statuses.
const (
	NotificationReceived  NotificationStatus = "received"
	NotificationProcessed NotificationStatus = "processed"
	NotificationIgnored   NotificationStatus = "ignored"
)

// InboxResult says what became of a notification delivered to the inbox.
type InboxResult int

// The inbox results.
const (
	// InboxAccepted: stored, and the runbook woken.
	InboxAccepted InboxResult = iota
	// InboxDuplicate: the same payload was stored before; nothing changed.
	InboxDuplicate
	// InboxConflict: another payload was stored under the key; refused.
	InboxConflict
)

// String names the result as the HTTP API reports it.
func (r InboxResult) String() string {
	switch r {
	case InboxDuplicate:
		return "duplicate"
	case InboxConflict:
		return "conflict"
	}
	return "accepted"
}
