-- Policy follows the effect, and trust is earned (docs/design/semantics.md
-- section 17).
--
-- What the token that submitted a runbook could do: its verb scope
-- (verbs= globs) and its max_risk, as JSON; NULL for a token that may use
-- every verb at any risk (or no token). A compensation and an escalation
-- run on that token's behalf, so they are checked against it when they
-- run. A regeneration keeps the scope of whoever regenerated.
ALTER TABLE runbooks ADD COLUMN submitter_scope jsonb;

-- Earned trust: how many attempts of a verb a tenant's people have
-- approved at a gate with no rejection, and no failed attempt, since. A
-- policy's trust: {GLOB: {after: N}} lets the verb run unattended once the
-- count reaches N. Counts move inside the transaction of the decision (an
-- increment) or of the failed attempt (a reset), one row per tenant and
-- verb, so two at once never lose one.
CREATE TABLE verb_trust (
    tenant     text        NOT NULL,
    verb       text        NOT NULL,
    approvals  integer     NOT NULL DEFAULT 0 CHECK (approvals >= 0),
    -- resets counts the times it fell back to zero; reset_at the last.
    resets     integer     NOT NULL DEFAULT 0,
    reset_at   timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, verb)
);

-- TRUST_EARNED and TRUST_LOST (section 17). The CHECK names every event type
-- the runtime writes (rbtype.EventTypes), so it is restated whole, with 021's.
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
    -- v4, section 17
    'TRUST_EARNED', 'TRUST_LOST'));
