-- docs/design/runtime.md, "The event ledger": the events one statement
-- appends for a runbook (an advance's, a submission's) are one row of
-- runbook_event_rows instead of a row each. A chain step's STEP_SUCCEEDED
-- and the next step's STEP_STARTED are written by one advance: one row,
-- one index entry and one tuple header where there were two.
--
-- Each event keeps an id of its own: a row's events are numbered from its
-- first_id, one apart (first_id + k for the k-th, from 0), and first_id
-- is nextval('runbook_event_ids') * 1024, so that a row holds at most
-- 1,024 events and ids only ever grow. Events written before this
-- migration keep their ids and times: each becomes a row of its own.
CREATE SEQUENCE runbook_event_ids AS bigint;

CREATE TABLE runbook_event_rows (
    -- No foreign key, as runbook_events had none since 008: prune deletes
    -- a runbook's events with it.
    runbook_id uuid        NOT NULL,
    first_id   bigint      NOT NULL,  -- the first event's id
    last_id    bigint      NOT NULL,  -- first_id + n - 1
    n          integer     NOT NULL CHECK (n BETWEEN 1 AND 1024),
    -- clock_timestamp() when the row was written: every event of the row
    -- was made by the statement that wrote it.
    at         timestamptz NOT NULL,
    -- One array per event, in id order, positional to keep the row small:
    -- [type, step_key, attempt, worker_id, data], null where
    -- runbook_events had NULL, and no data at all where it had none (so
    -- that a JSON null stays one).
    events     jsonb       NOT NULL CHECK (jsonb_typeof(events) = 'array'),
    CHECK (last_id = first_id + n - 1)
);

-- Readers page a runbook's ledger after an event id: the rows whose last
-- event is past it, in order. A runbook's rows never interleave (its
-- events are written under its lock), so last_id orders them.
CREATE INDEX runbook_event_rows_runbook ON runbook_event_rows (runbook_id, last_id);

INSERT INTO runbook_event_rows (runbook_id, first_id, last_id, n, at, events)
SELECT runbook_id, id, id, 1, at, jsonb_build_array(CASE WHEN data IS NULL
    THEN jsonb_build_array(type, step_key, attempt, worker_id)
    ELSE jsonb_build_array(type, step_key, attempt, worker_id, data) END)
FROM runbook_events;

-- New ids continue after every id the identity column handed out.
SELECT setval('runbook_event_ids', nextval('runbook_events_id_seq') / 1024 + 1, false);

-- runbook_events is left, empty, for migrations written against it that
-- change its type check (a new event type); nothing reads or writes it.
-- The types are checked where the rows are built (durable.checkEventTypes).
-- A later migration drops it.
DELETE FROM runbook_events;
