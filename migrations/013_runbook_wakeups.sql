-- Issue 26: the claim's cost stays flat however long the daemon runs and
-- however much history the tables keep.
--
-- A runbook's wake-up changed on most advances, and every change left a
-- dead entry in the runbooks_wake_at index that the claim then walked past
-- until a VACUUM removed it: with nothing due, the claim read 2 pages on
-- 5,000 parked runbooks, 65 after 10,000 wake-ups
-- (durable/claim_churn_test.go). The runbooks table also holds the history,
-- so autovacuum's threshold (a fifth of the rows dead) rose with every
-- runbook kept, and it came ever later.
--
-- Wake-ups now live in a table of their own: a row for each runbook that
-- has one, none for the finished. It stays as small as the work in hand,
-- is vacuumed after every 500 dead rows whatever the history, and the
-- runbooks table is no longer written at every advance (most advances
-- change a wake-up and nothing else of the runbook row).
CREATE TABLE runbook_wakeups (
    runbook_id uuid        PRIMARY KEY REFERENCES runbooks (id) ON DELETE CASCADE,
    wake_at    timestamptz NOT NULL
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 500,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000,
        autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 1000);

CREATE INDEX runbook_wakeups_due ON runbook_wakeups (wake_at);

INSERT INTO runbook_wakeups (runbook_id, wake_at)
SELECT id, wake_at FROM runbooks WHERE wake_at IS NOT NULL;

DROP INDEX runbooks_wake_at;
ALTER TABLE runbooks DROP COLUMN wake_at;
