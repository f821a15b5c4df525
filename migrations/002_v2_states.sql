-- docs/design/semantics.md (v2) adds runbook statuses and event types. The CHECK
-- constraints still name every value the runtime may write, so a bug can
-- never store one it does not know; they admit all of v2's at once, so
-- that each capability need not bring a migration of its own.
ALTER TABLE runbooks DROP CONSTRAINT runbooks_status_check;
ALTER TABLE runbooks ADD CONSTRAINT runbooks_status_check
    CHECK (status IN ('executing', 'complete', 'failed', 'cancelled', 'escalated', 'partial', 'in_progress'));

ALTER TABLE runbook_events DROP CONSTRAINT runbook_events_type_check;
ALTER TABLE runbook_events ADD CONSTRAINT runbook_events_type_check CHECK (type IN (
    'RUNBOOK_SUBMITTED', 'STEP_READY', 'STEP_STARTED', 'STEP_SUCCEEDED', 'STEP_FAILED',
    'STEP_RETRY_SCHEDULED', 'STEP_PARKED', 'STEP_RESUMED', 'STEP_TIMED_OUT', 'GATE_REQUESTED',
    'GATE_APPROVED', 'GATE_REJECTED', 'STEP_CANCELLED', 'STEP_SKIPPED', 'COMPENSATION_STARTED',
    'COMPENSATION_SUCCEEDED', 'COMPENSATION_FAILED', 'RUNBOOK_EXTENDED', 'RUNBOOK_COMPLETED',
    'RUNBOOK_FAILED', 'RUNBOOK_CANCELLED', 'RUNBOOK_ESCALATED',
    -- v2
    'RUNBOOK_RETRIED', 'RUNBOOK_REGENERATED', 'RUNBOOK_PARTIAL', 'RUNBOOK_CLOSED',
    'STEP_DRY_RUN', 'STEP_VERIFIED', 'STEP_VERIFY_FAILED', 'STEP_RECLAIMED', 'STEP_HEARTBEAT',
    'STEP_RESOLVED', 'ESCALATION_STARTED', 'ESCALATION_SUCCEEDED', 'ESCALATION_FAILED',
    'INVOCATION_CANCEL_SENT', 'INVOCATION_CANCEL_FAILED'));

ALTER TABLE runbook_mutations DROP CONSTRAINT runbook_mutations_kind_check;
ALTER TABLE runbook_mutations ADD CONSTRAINT runbook_mutations_kind_check
    CHECK (kind IN ('extend', 'retry', 'resolve', 'close'));
