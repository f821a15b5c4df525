-- docs/design/semantics.md section 16: a step whose provider ignores
-- idempotency keys (provider_dedupes: false) and whose call was cut off
-- with no receipt is in_doubt (STEP_IN_DOUBT) until a person resolves it.
-- The CHECKs name every value the runtime writes (rbtype.StepStatuses,
-- rbtype.EventTypes), so each is restated whole.
ALTER TABLE runbook_steps DROP CONSTRAINT runbook_steps_status_check;
ALTER TABLE runbook_steps ADD CONSTRAINT runbook_steps_status_check
    CHECK (status IN ('pending', 'ready', 'waiting_approval', 'running', 'parked',
                      'failed_retryable', 'complete', 'failed', 'skipped',
                      'cancelled', 'escalated', 'in_doubt'));

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
    'COMPENSATION_SKIPPED', 'ESCALATION_SKIPPED',
    -- v1.2 and v1.3
    'HOOK_STARTED', 'HOOK_SUCCEEDED', 'HOOK_FAILED', 'MAP_EXPANDED',
    -- v4 (024: trust; this: in doubt)
    'TRUST_EARNED', 'TRUST_LOST', 'STEP_IN_DOUBT'));

-- Twins attach (section 16): a durable step whose key is global or
-- tenant-scoped records that key on its wait, so that another runbook's
-- step under the same key finds the wait open and attaches to it (its
-- own wait, attached, makes no call) instead of starting the work again.
-- Only such waits carry a key; the index holds only those still open.
ALTER TABLE invocation_records ADD COLUMN idempotency_key text;
ALTER TABLE invocation_records ADD COLUMN attached boolean NOT NULL DEFAULT false;
CREATE INDEX invocation_records_open_key ON invocation_records (idempotency_key)
    WHERE status = 'active' AND idempotency_key IS NOT NULL AND NOT attached;
