-- The tables of docs/design/runtime.md. Every status column carries a CHECK constraint,
-- so a bug can never store a state the runtime does not know.

CREATE TABLE runbooks (
    id            uuid        PRIMARY KEY,
    plan          jsonb       NOT NULL,  -- the frozen plan, as compiled
    plan_hash     text        NOT NULL,
    inputs        jsonb       NOT NULL DEFAULT '{}',
    status        text        NOT NULL DEFAULT 'executing'
                  CHECK (status IN ('executing', 'complete', 'failed', 'cancelled', 'escalated')),
    mode          text        NOT NULL DEFAULT 'execute'
                  CHECK (mode IN ('execute', 'dry_run')),
    -- Request-level dedupe: the submission's Idempotency-Key, or a hash of
    -- plan and inputs.
    request_key   text        NOT NULL UNIQUE,
    -- The plan's version: 1, then one more for each extension.
    version       integer     NOT NULL DEFAULT 1 CHECK (version >= 1),
    -- When a worker must next look at the runbook: now for ready work, the
    -- earliest lease expiry, retry or park timeout otherwise, NULL when
    -- only the outside world can move it (a notification, an approval).
    wake_at       timestamptz,
    error_code    text,
    error_message text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
) WITH (fillfactor = 80);

-- Workers claim due runbooks: WHERE wake_at <= now() ORDER BY wake_at.
CREATE INDEX runbooks_wake_at ON runbooks (wake_at) WHERE wake_at IS NOT NULL;
-- The API lists runbooks newest first, optionally by status.
CREATE INDEX runbooks_created ON runbooks (created_at DESC, id DESC);
CREATE INDEX runbooks_status_created ON runbooks (status, created_at DESC, id DESC);

CREATE TABLE runbook_steps (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    runbook_id       uuid        NOT NULL REFERENCES runbooks (id) ON DELETE CASCADE,
    key              text        NOT NULL,
    position         integer     NOT NULL,  -- the plan's stable topological order
    verb             text        NOT NULL,
    args             jsonb       NOT NULL,  -- as frozen: literals, {"$ref"}, {"$input"}
    execution        jsonb       NOT NULL,  -- the verb's frozen execution block
    gate             text        NOT NULL DEFAULT 'none' CHECK (gate IN ('none', 'human_confirm')),
    status           text        NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'ready', 'waiting_approval', 'running', 'parked',
                                       'failed_retryable', 'complete', 'failed', 'skipped',
                                       'cancelled', 'escalated')),
    attempt          integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    next_attempt_at  timestamptz,
    idempotency_key  text,
    invocation_id    uuid,
    resolved_args    jsonb,      -- the arguments of the last attempt, references resolved
    result           jsonb,
    error_code       text,
    error_message    text,
    simulated        boolean     NOT NULL DEFAULT false,  -- dry run: recorded, not performed
    gate_decision    text        CHECK (gate_decision IN ('approved', 'rejected')),
    gate_decided_by  text,
    gate_decided_at  timestamptz,
    gate_comment     text,
    -- Saga: set to pending when the runbook fails and the verb declares a
    -- compensation; compensations run in reverse completion_seq order.
    completion_seq   bigint,
    compensation_status text     CHECK (compensation_status IN ('pending', 'running', 'complete', 'failed')),
    compensation_error  text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    UNIQUE (runbook_id, key),
    UNIQUE (runbook_id, position)
) WITH (fillfactor = 70);  -- room on each page for HOT updates: steps change state several times

-- Orders completions across transactions, for compensation in reverse.
CREATE SEQUENCE runbook_steps_completion_seq;

-- Retries wait in failed_retryable until next_attempt_at. The predicate
-- names next_attempt_at, not status, so that the many updates that change
-- a step's status but not its retry time stay HOT (no index is touched).
CREATE INDEX runbook_steps_retry_due ON runbook_steps (next_attempt_at)
    WHERE next_attempt_at IS NOT NULL;

-- The canonical dependency graph: to_key runs after from_key completes.
CREATE TABLE runbook_edges (
    runbook_id uuid NOT NULL REFERENCES runbooks (id) ON DELETE CASCADE,
    to_key     text NOT NULL,
    from_key   text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('data', 'sequence')),
    PRIMARY KEY (runbook_id, to_key, from_key)
);

-- One row per step: who holds it, for which attempt, until when.
CREATE TABLE step_leases (
    step_id     bigint      PRIMARY KEY REFERENCES runbook_steps (id) ON DELETE CASCADE,
    runbook_id  uuid        NOT NULL,
    worker_id   text        NOT NULL,
    attempt     integer     NOT NULL,
    status      text        NOT NULL CHECK (status IN ('active', 'released', 'reclaimed')),
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);

-- Expired leases are found by this index.
CREATE INDEX step_leases_expiry ON step_leases (expires_at) WHERE status = 'active';

-- A durable step's wait for the outside world.
CREATE TABLE invocation_records (
    invocation_id    uuid        PRIMARY KEY,
    step_id          bigint      NOT NULL REFERENCES runbook_steps (id) ON DELETE CASCADE,
    runbook_id       uuid        NOT NULL,
    attempt          integer     NOT NULL,
    correlation_key  text        NOT NULL UNIQUE,
    status           text        NOT NULL DEFAULT 'active'
                     CHECK (status IN ('active', 'completed', 'timed_out', 'cancelled')),
    parked_at        timestamptz NOT NULL DEFAULT now(),
    timeout_at       timestamptz NOT NULL,
    context          jsonb       NOT NULL DEFAULT '{}',  -- what the step was called with
    external_id      text,                               -- the external process, best effort
    finished_at      timestamptz
);

-- The timeout sweep: active invocations past their timeout.
CREATE INDEX invocation_records_timeout ON invocation_records (timeout_at) WHERE status = 'active';
CREATE INDEX invocation_records_runbook ON invocation_records (runbook_id) WHERE status = 'active';

-- The inbox. One row per correlation key; a repeat with the same payload is
-- a duplicate, with another payload a conflict.
CREATE TABLE completion_notifications (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    correlation_key text        NOT NULL UNIQUE,
    payload_hash    text        NOT NULL,
    outcome         text        NOT NULL CHECK (outcome IN ('completed', 'failed')),
    result          jsonb,
    error_code      text,
    error_message   text,
    status          text        NOT NULL DEFAULT 'received'
                    CHECK (status IN ('received', 'processed', 'ignored')),
    received_at     timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz
);

-- The inbox sweep: notifications not yet processed.
CREATE INDEX completion_notifications_unprocessed ON completion_notifications (received_at)
    WHERE status = 'received';

-- Action-level idempotency: a handler's result for an idempotency key.
CREATE TABLE action_receipts (
    handler         text        NOT NULL,
    idempotency_key text        NOT NULL,
    runbook_id      uuid        NOT NULL,
    step_key        text        NOT NULL,
    result          jsonb       NOT NULL,
    result_hash     text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (handler, idempotency_key)
);

-- The append-only ledger.
CREATE TABLE runbook_events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    runbook_id  uuid        NOT NULL REFERENCES runbooks (id) ON DELETE CASCADE,
    type        text        NOT NULL CHECK (type IN (
                    'RUNBOOK_SUBMITTED', 'STEP_READY', 'STEP_STARTED', 'STEP_SUCCEEDED',
                    'STEP_FAILED', 'STEP_RETRY_SCHEDULED', 'STEP_PARKED', 'STEP_RESUMED',
                    'STEP_TIMED_OUT', 'GATE_REQUESTED', 'GATE_APPROVED', 'GATE_REJECTED',
                    'STEP_CANCELLED', 'STEP_SKIPPED', 'COMPENSATION_STARTED',
                    'COMPENSATION_SUCCEEDED', 'COMPENSATION_FAILED', 'RUNBOOK_EXTENDED',
                    'RUNBOOK_COMPLETED', 'RUNBOOK_FAILED', 'RUNBOOK_CANCELLED', 'RUNBOOK_ESCALATED')),
    step_key    text,
    attempt     integer,
    worker_id   text,
    data        jsonb,
    at          timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX runbook_events_runbook ON runbook_events (runbook_id, id);

-- Append-only log of changes to a running runbook.
CREATE TABLE runbook_mutations (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    runbook_id  uuid        NOT NULL REFERENCES runbooks (id) ON DELETE CASCADE,
    actor       text        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('extend')),
    payload     jsonb       NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX runbook_mutations_runbook ON runbook_mutations (runbook_id, id);
