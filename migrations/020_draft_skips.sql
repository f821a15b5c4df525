-- Issue 27: a draft_only runbook runs no compensation and no escalation
-- whose verb reaches the outside world (external_call, human_process): it
-- records them skipped, with the reason DRAFT_ONLY, as it does the steps
-- it does not run. The CHECK constraints name the new state and the two
-- events that record it (with every event type before them: a later
-- migration that redefines the list must keep these two).
ALTER TABLE runbook_steps DROP CONSTRAINT runbook_steps_compensation_status_check;
ALTER TABLE runbook_steps ADD CONSTRAINT runbook_steps_compensation_status_check
    CHECK (compensation_status IN ('pending', 'running', 'complete', 'failed', 'skipped'));
ALTER TABLE runbook_steps DROP CONSTRAINT runbook_steps_escalation_status_check;
ALTER TABLE runbook_steps ADD CONSTRAINT runbook_steps_escalation_status_check
    CHECK (escalation_status IN ('pending', 'running', 'complete', 'failed', 'skipped'));

ALTER TABLE runbook_events DROP CONSTRAINT runbook_events_type_check;
ALTER TABLE runbook_events ADD CONSTRAINT runbook_events_type_check CHECK (type IN (
    'RUNBOOK_SUBMITTED', 'STEP_READY', 'STEP_STARTED', 'STEP_SUCCEEDED', 'STEP_FAILED',
    'STEP_RETRY_SCHEDULED', 'STEP_PARKED', 'STEP_RESUMED', 'STEP_TIMED_OUT', 'GATE_REQUESTED',
    'GATE_APPROVED', 'GATE_REJECTED', 'STEP_CANCELLED', 'STEP_SKIPPED', 'COMPENSATION_STARTED',
    'COMPENSATION_SUCCEEDED', 'COMPENSATION_FAILED', 'RUNBOOK_EXTENDED', 'RUNBOOK_COMPLETED',
    'RUNBOOK_FAILED', 'RUNBOOK_CANCELLED', 'RUNBOOK_ESCALATED',
    'RUNBOOK_RETRIED', 'RUNBOOK_REGENERATED', 'RUNBOOK_PARTIAL', 'RUNBOOK_CLOSED',
    'STEP_DRY_RUN', 'STEP_VERIFIED', 'STEP_VERIFY_FAILED', 'STEP_RECLAIMED', 'STEP_HEARTBEAT',
    'STEP_RESOLVED', 'ESCALATION_STARTED', 'ESCALATION_SUCCEEDED', 'ESCALATION_FAILED',
    'INVOCATION_CANCEL_SENT', 'INVOCATION_CANCEL_FAILED',
    -- v3
    'POLICY_GATED', 'BUDGET_EXCEEDED', 'OUTCOME_RECORDED', 'SCHEDULE_FIRED', 'SCHEDULE_SKIPPED',
    -- issue 27
    'COMPENSATION_SKIPPED', 'ESCALATION_SKIPPED'));
