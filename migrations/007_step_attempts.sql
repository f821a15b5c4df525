-- docs/design/semantics.md section 3: the job ledger. One row per attempt of a step
-- (a cache hit is a row of its own, attempt 0, at no cost), with what it
-- came to and what it used: costs attach to attempts, never to messages.
-- The trace columns are ready for section 2.
CREATE TABLE step_attempts (
    attempt_id     uuid        NOT NULL,     -- UUIDv5 of runbook, step and attempt
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
    credits        numeric,
    -- One index, whose prefix is also a runbook's roll-up: every row
    -- costs the advance that writes it an entry in each index, and the
    -- ledger is written for every attempt.
    PRIMARY KEY (runbook_id, step_key, attempt)
);

-- The costs report reads a window of time: rows are written in time
-- order, which a BRIN index summarizes for next to nothing.
CREATE INDEX step_attempts_finished ON step_attempts USING brin (finished_at);

-- Who submitted a runbook, for the costs report by actor.
ALTER TABLE runbooks ADD COLUMN actor text NOT NULL DEFAULT '';
