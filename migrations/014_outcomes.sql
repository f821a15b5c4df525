-- docs/design/semantics.md section 13: outcomes with provenance. A step whose verb
-- declares an outcome records one row each time it succeeds: its type,
-- draft or final, a preview, the attempt that made it with the hashes of
-- its arguments and result, the model and parameters its usage reported,
-- the outcomes it consumed, and its version across a lineage's
-- regenerations (version n+1 names version n as previous).
CREATE TABLE outcomes (
    outcome_id   uuid        PRIMARY KEY,   -- UUIDv5 of runbook, step and generation
    tenant       text        NOT NULL,
    runbook_id   uuid        NOT NULL REFERENCES runbooks (id) ON DELETE CASCADE,
    lineage_root uuid        NOT NULL,      -- the runbook itself for an original
    generation   integer     NOT NULL,
    step_key     text        NOT NULL,
    attempt      integer     NOT NULL,
    verb         text        NOT NULL,
    type         text        NOT NULL,
    status       text        NOT NULL CHECK (status IN ('draft', 'final')),
    preview      text        NOT NULL DEFAULT '',
    args_hash    text,
    result_hash  text        NOT NULL,
    model        text,
    parameters   jsonb,
    consumed     uuid[]      NOT NULL DEFAULT '{}',
    version      integer     NOT NULL CHECK (version >= 1),
    previous     uuid,                      -- no foreign key: a pruned version stays named
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A runbook's outcomes (the view's produced), and a lineage's versions of
-- one step's outcome, newest first.
CREATE INDEX outcomes_runbook ON outcomes (runbook_id);
CREATE INDEX outcomes_lineage ON outcomes (lineage_root, step_key, generation);

-- Every attempt keeps its own arguments (docs/design/semantics.md section 13): the
-- ledger row has their hash, and the arguments are those of the step's
-- row when the hashes agree. When a step starts again with arguments that
-- differ from the ones it held, the ones it held are kept here first, by
-- hash: the ledger's hash is the pointer. The ledger outlives rbd prune;
-- arguments, which may be anyone's data, go with their runbook.
ALTER TABLE step_attempts ADD COLUMN args_hash text, ADD COLUMN result_hash text;
CREATE TABLE attempt_arguments (
    runbook_id uuid  NOT NULL REFERENCES runbooks (id) ON DELETE CASCADE,
    args_hash  text  NOT NULL,
    args       jsonb NOT NULL,
    PRIMARY KEY (runbook_id, args_hash)
);

-- v3's event types, all at once as v2's were (002): outcomes (above),
-- schedules, policy and budgets.
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
    'INVOCATION_CANCEL_SENT', 'INVOCATION_CANCEL_FAILED',
    -- v3
    'POLICY_GATED', 'BUDGET_EXCEEDED', 'OUTCOME_RECORDED', 'SCHEDULE_FIRED', 'SCHEDULE_SKIPPED'));
