-- Issue 15: a step's lease lives in the step's own row. The lease was a
-- row of step_leases, inserted when the step started and updated when it
-- finished: two rows, two index entries and a foreign-key check for every
-- step, beside the step row's own two updates. As columns of runbook_steps,
-- which no index covers, taking and giving up a lease ride on the updates
-- the step gets anyway, and they stay HOT.
--
-- A lease is active while lease_worker is set. Nothing indexes the expiry:
-- a runbook with a call out keeps a wake-up no later than its leases
-- expire (runtime: transition.writeTo), so a dead worker's steps are found
-- by the claim of due runbooks, not by a sweep.
ALTER TABLE runbook_steps
    ADD COLUMN lease_worker      text,
    ADD COLUMN lease_attempt     integer,
    ADD COLUMN lease_acquired_at timestamptz,
    ADD COLUMN lease_expires_at  timestamptz;

UPDATE runbook_steps s SET
    lease_worker = l.worker_id, lease_attempt = l.attempt,
    lease_acquired_at = l.acquired_at, lease_expires_at = l.expires_at
FROM step_leases l
WHERE l.step_id = s.id AND l.status = 'active';

-- The leases carried over were found by the lease sweep; from here on
-- their runbooks' wake-ups find them. Make those runbooks due once, so an
-- advance sets the wake-up by the new rule.
UPDATE runbooks r SET wake_at = now()
FROM (SELECT DISTINCT runbook_id FROM step_leases WHERE status = 'active') l
WHERE r.id = l.runbook_id AND (r.wake_at IS NULL OR r.wake_at > now());

DROP TABLE step_leases;

-- docs/design/runtime.md names step_leases; it stays readable, as a view of the active
-- leases.
CREATE VIEW step_leases AS
    SELECT id AS step_id, runbook_id, lease_worker AS worker_id, lease_attempt AS attempt,
           'active'::text AS status, lease_acquired_at AS acquired_at, lease_expires_at AS expires_at
    FROM runbook_steps
    WHERE lease_worker IS NOT NULL;

-- The append-only event ledger checks no foreign key. Every event written
-- checked that its runbook exists with a FOR KEY SHARE lock on the runbook
-- row, which writes the row's header and a WAL record: two of them for
-- every step, for a runbook that is, by construction, locked and present.
-- Pruning deletes a runbook's events itself (durable.PruneFinished).
ALTER TABLE runbook_events DROP CONSTRAINT runbook_events_runbook_id_fkey;
