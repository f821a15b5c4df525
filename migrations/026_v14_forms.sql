-- docs/design/language.md v1.4 at run time: a wait that took its
-- :timeout-result (STEP_TIMEOUT_DEFAULTED) and a wait's reminder
-- (STEP_REMINDED). The CHECK names every event type the runtime writes
-- (rbtype.EventTypes), so it is restated whole, with 021's, 024's and 025's.
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
    -- v4: 024 (trust), 025 (in doubt), and v1.4's
    'TRUST_EARNED', 'TRUST_LOST', 'STEP_IN_DOUBT', 'STEP_TIMEOUT_DEFAULTED', 'STEP_REMINDED'));

-- A status test's edge (kind settle, docs/design/language.md v1.4): the
-- step waits for its source to settle, whatever it settled with.
ALTER TABLE runbook_edges DROP CONSTRAINT runbook_edges_kind_check;
ALTER TABLE runbook_edges ADD CONSTRAINT runbook_edges_kind_check CHECK (kind IN ('data', 'sequence', 'settle'));
