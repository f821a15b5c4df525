-- SEMANTICS.md section 3: the job ledger. One row per attempt of a step
-- (a cache hit is a row of its own, attempt 0, at no cost), with what it
-- came to and what it used: costs attach to attempts, never to messages.
-- The trace columns are ready for section 2.
CREATE TABLE step_attempts (
    attempt_id     uuid        PRIMARY KEY,  -- UUIDv5 of runbook, step and attempt
    -- No foreign key: the ledger is the bill, and outlives rbd prune.
    runbook_id     uuid        NOT NULL,
    tenant         text        NOT NULL,
    actor          text        NOT NULL DEFAULT '',
    step_key       text        NOT NULL,
    verb           text        NOT NULL,
    attempt        integer     NOT NULL,
    worker_id      text,
    started_at     timestamptz,
    finished_at    timestamptz NOT NULL,
    outcome        text        NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'parked')),
    error_code     text,
    cache          text        NOT NULL DEFAULT 'off' CHECK (cache IN ('hit', 'miss', 'off')),
    correlation_id text,
    trace_id       text,
    span_id        text,
    tokens_in      bigint,
    tokens_out     bigint,
    model          text,
    cost_usd       numeric,
    credits        numeric
);

-- A runbook's roll-up, and the costs report by tenant and time.
CREATE INDEX step_attempts_runbook ON step_attempts (runbook_id);
CREATE INDEX step_attempts_tenant_finished ON step_attempts (tenant, finished_at);

-- Who submitted a runbook, for the costs report by actor.
ALTER TABLE runbooks ADD COLUMN actor text NOT NULL DEFAULT '';
