-- docs/design/runtime.md, "The event ledger": the events one statement
-- appends for a runbook (an advance's, a submission's) are one row of
-- runbook_event_rows, a JSON array in id order, instead of a row each.
-- A chain step's STEP_SUCCEEDED and the next step's STEP_STARTED are
-- written by one advance: one row, one index entry and one tuple header
-- where there were two. Every event keeps its own id (from
-- runbook_event_ids, as the identity column handed them out), its own
-- clock_timestamp() and its place in its runbook's ledger, so readers by
-- event id see the same events, in the same order, with the same ids.
CREATE SEQUENCE runbook_event_ids AS bigint;

CREATE TABLE runbook_event_rows (
    -- No foreign key, as runbook_events had none since 008: prune deletes
    -- a runbook's events with it.
    runbook_id uuid    NOT NULL,
    first_id   bigint  NOT NULL,  -- the first event's id
    last_id    bigint  NOT NULL,  -- the last event's id
    n          integer NOT NULL CHECK (n > 0),  -- how many events
    -- [{"id", "type", "step_key"?, "attempt"?, "worker_id"?, "data"?, "at"}...]
    -- in id order; absent keys are NULL columns of runbook_events.
    events     jsonb   NOT NULL CHECK (jsonb_typeof(events) = 'array'),
    CHECK (first_id <= last_id)
);

-- Readers page a runbook's ledger after an event id: the rows whose last
-- event is past it, in order. A runbook's rows never interleave (its
-- events are written under its lock), so last_id orders them.
CREATE INDEX runbook_event_rows_runbook ON runbook_event_rows (runbook_id, last_id);

-- Existing events: each runbook's become one row, ids and times kept.
INSERT INTO runbook_event_rows (runbook_id, first_id, last_id, n, events)
SELECT runbook_id, min(id), max(id), count(*),
    jsonb_agg(jsonb_strip_nulls(jsonb_build_object('id', id, 'type', type, 'step_key', step_key,
        'attempt', attempt, 'worker_id', worker_id, 'at', at))
        || CASE WHEN data IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('data', data) END
        ORDER BY id)
FROM runbook_events GROUP BY runbook_id;

-- New ids continue after every id the identity column handed out.
SELECT setval('runbook_event_ids', nextval('runbook_events_id_seq'), false);

-- runbook_events is left, empty, for migrations written against it that
-- change its type check (a new event type); nothing reads or writes it.
-- A later migration drops it.
DELETE FROM runbook_events;
