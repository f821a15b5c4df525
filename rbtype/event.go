package rbtype

// EventType names an entry of a runbook's ledger (docs/design/runtime.md, "Events").
type EventType string

// The event types.
const (
	EventRunbookSubmitted      EventType = "RUNBOOK_SUBMITTED"
	EventStepReady             EventType = "STEP_READY"
	EventStepStarted           EventType = "STEP_STARTED"
	EventStepSucceeded         EventType = "STEP_SUCCEEDED"
	EventStepFailed            EventType = "STEP_FAILED"
	EventStepRetryScheduled    EventType = "STEP_RETRY_SCHEDULED"
	EventStepParked            EventType = "STEP_PARKED"
	EventStepResumed           EventType = "STEP_RESUMED"
	EventStepTimedOut          EventType = "STEP_TIMED_OUT"
	EventGateRequested         EventType = "GATE_REQUESTED"
	EventGateApproved          EventType = "GATE_APPROVED"
	EventGateRejected          EventType = "GATE_REJECTED"
	EventStepCancelled         EventType = "STEP_CANCELLED"
	EventStepSkipped           EventType = "STEP_SKIPPED"
	EventCompensationStarted   EventType = "COMPENSATION_STARTED"
	EventCompensationSucceeded EventType = "COMPENSATION_SUCCEEDED"
	EventCompensationFailed    EventType = "COMPENSATION_FAILED"
	// EventCompensationSkipped: a draft_only runbook did not run a
	// compensation whose verb reaches outside; {"reason": "DRAFT_ONLY"}.
	EventCompensationSkipped EventType = "COMPENSATION_SKIPPED"
	EventRunbookExtended     EventType = "RUNBOOK_EXTENDED"
	EventRunbookCompleted    EventType = "RUNBOOK_COMPLETED"
	EventRunbookFailed       EventType = "RUNBOOK_FAILED"
	EventRunbookCancelled    EventType = "RUNBOOK_CANCELLED"
	// EventRunbookEscalated ends a runbook whose failure was handed to a
	// person (a park timeout with on_timeout: escalate). docs/design/runtime.md lists
	// the status but no event for it.
	EventRunbookEscalated EventType = "RUNBOOK_ESCALATED"
	// EventRunbookPartial ends a runbook whose only failures were
	// accepted (on_failure: continue).
	EventRunbookPartial EventType = "RUNBOOK_PARTIAL"
	// EventRunbookRetried: a failed, partial or escalated runbook's steps
	// went back to pending (docs/design/semantics.md section 6).
	EventRunbookRetried EventType = "RUNBOOK_RETRIED"
	// EventRunbookRegenerated: on a regeneration, naming its parent and
	// root; on the parent, naming the regeneration.
	EventRunbookRegenerated EventType = "RUNBOOK_REGENERATED"
	// EventEscalationStarted: an escalating wait's escalation verb runs.
	EventEscalationStarted EventType = "ESCALATION_STARTED"
	// EventEscalationSucceeded: it returned.
	EventEscalationSucceeded EventType = "ESCALATION_SUCCEEDED"
	// EventEscalationFailed: it failed; the step stays escalated.
	EventEscalationFailed EventType = "ESCALATION_FAILED"
	// EventEscalationSkipped: a draft_only runbook did not run an
	// escalation whose verb reaches outside; {"reason": "DRAFT_ONLY"}.
	EventEscalationSkipped EventType = "ESCALATION_SKIPPED"
	// EventStepDryRun: a full or guarded step's handler dry-ran.
	EventStepDryRun EventType = "STEP_DRY_RUN"
	// EventStepVerified: a full step's dry run passed verification.
	EventStepVerified EventType = "STEP_VERIFIED"
	// EventStepVerifyFailed: it did not; nothing was committed.
	EventStepVerifyFailed EventType = "STEP_VERIFY_FAILED"
	// EventStepReclaimed: a running step's worker died or gave it up; it
	// runs again under the same key (docs/design/semantics.md section 7).
	EventStepReclaimed EventType = "STEP_RECLAIMED"
	// EventRunbookClosed: a held-open runbook may finish now.
	EventRunbookClosed EventType = "RUNBOOK_CLOSED"
	// EventStepHeartbeat: a parked step's external work said it goes on.
	EventStepHeartbeat EventType = "STEP_HEARTBEAT"
	// EventStepInDoubt: a reclaimed call to a provider that ignores
	// idempotency keys had no receipt; the step is in_doubt, not called
	// again, until a person resolves it.
	EventStepInDoubt EventType = "STEP_IN_DOUBT"
	// EventStepResolved: a person resolved an escalated step.
	EventStepResolved EventType = "STEP_RESOLVED"
	// EventInvocationCancelSent: a cancelled runbook asked the outside
	// world to stop a wait's work (best effort).
	EventInvocationCancelSent EventType = "INVOCATION_CANCEL_SENT"
	// EventInvocationCancelFailed: asking it failed.
	EventInvocationCancelFailed EventType = "INVOCATION_CANCEL_FAILED"
	// EventOutcomeRecorded: a step whose verb declares an outcome
	// succeeded, and its outcome was recorded (docs/design/semantics.md section 13).
	EventOutcomeRecorded EventType = "OUTCOME_RECORDED"
	// EventScheduleFired: a schedule's tick submitted this runbook
	// (docs/design/semantics.md section 14); the first event after RUNBOOK_SUBMITTED.
	EventScheduleFired EventType = "SCHEDULE_FIRED"
	// EventScheduleSkipped: a schedule's tick found this runbook, its
	// previous one, unfinished under overlap: skip, and submitted nothing.
	EventScheduleSkipped EventType = "SCHEDULE_SKIPPED"
	// EventPolicyGated: the tenant's policy froze a human_confirm gate on
	// a step when its plan was admitted, by the rule it names
	// (docs/design/semantics.md section 10).
	EventPolicyGated EventType = "POLICY_GATED"
	// EventBudgetExceeded: a step did not start, its runbook's or its
	// tenant's budget being spent (docs/design/semantics.md section 11).
	EventBudgetExceeded EventType = "BUDGET_EXCEEDED"
	// EventHookStarted, EventHookSucceeded and EventHookFailed are a
	// failure hook's (docs/design/language.md v1.2) STEP_STARTED,
	// STEP_SUCCEEDED and STEP_FAILED.
	EventHookStarted   EventType = "HOOK_STARTED"
	EventHookSucceeded EventType = "HOOK_SUCCEEDED"
	EventHookFailed    EventType = "HOOK_FAILED"
	// EventMapExpanded: a for-each's list became known and its templates
	// were expanded, one step per element and template
	// (docs/design/language.md v1.3).
	EventMapExpanded EventType = "MAP_EXPANDED"
	// EventTrustEarned: a gate's approval brought the tenant's count of
	// approved attempts of the step's verb to its policy's trust
	// threshold: its steps run unattended from the next admission
	// (docs/design/semantics.md section 17).
	EventTrustEarned EventType = "TRUST_EARNED"
	// EventTrustLost: a rejection or a failed attempt reset the tenant's
	// count for the step's verb.
	EventTrustLost EventType = "TRUST_LOST"
	// EventStepTimeoutDefaulted: a wait timed out and its step took its
	// :timeout-result (docs/design/language.md v1.4); STEP_SUCCEEDED
	// follows, its provenance "default".
	EventStepTimeoutDefaulted EventType = "STEP_TIMEOUT_DEFAULTED"
	// EventStepReminded: a wait's :remind-after came; its escalation verb
	// runs once and the wait goes on (docs/design/language.md v1.4).
	EventStepReminded EventType = "STEP_REMINDED"
)

// EventTypes lists every event type the runtime writes.
var EventTypes = []EventType{
	EventRunbookSubmitted, EventStepReady, EventStepStarted, EventStepSucceeded, EventStepFailed,
	EventStepRetryScheduled, EventStepParked, EventStepResumed, EventStepTimedOut, EventGateRequested,
	EventGateApproved, EventGateRejected, EventStepCancelled, EventStepSkipped, EventCompensationStarted,
	EventCompensationSucceeded, EventCompensationFailed, EventRunbookExtended, EventRunbookCompleted,
	EventRunbookFailed, EventRunbookCancelled, EventRunbookEscalated, EventRunbookPartial,
	EventRunbookRetried, EventRunbookClosed, EventStepHeartbeat, EventStepResolved,
	EventInvocationCancelSent, EventInvocationCancelFailed, EventRunbookRegenerated,
	EventEscalationStarted, EventEscalationSucceeded, EventEscalationFailed, EventStepReclaimed,
	EventStepDryRun, EventStepVerified, EventStepVerifyFailed, EventOutcomeRecorded, EventScheduleFired,
	EventScheduleSkipped, EventPolicyGated, EventBudgetExceeded, EventCompensationSkipped, EventEscalationSkipped,
	EventHookStarted, EventHookSucceeded, EventHookFailed, EventMapExpanded, EventTrustEarned, EventTrustLost, EventStepInDoubt,
	EventStepTimeoutDefaulted, EventStepReminded,
}

// MutationKind names an entry of a runbook's mutation log.
type MutationKind string

// The mutation kinds.
const (
	MutationExtend  MutationKind = "extend"
	MutationRetry   MutationKind = "retry"
	MutationClose   MutationKind = "close"
	MutationResolve MutationKind = "resolve"
	// MutationRegenerate is logged on the parent of a regeneration.
	MutationRegenerate MutationKind = "regenerate"
)

// MutationKinds lists every mutation kind the runtime writes.
var MutationKinds = []MutationKind{MutationExtend, MutationRetry, MutationClose, MutationResolve, MutationRegenerate}
