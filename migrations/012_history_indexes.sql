-- Issue 26: the hot path keeps to its indexes however much history the
-- tables hold (runtime/queryplan_test.go runs every statement of it under
-- its generic plan over 20,000 finished runbooks).
--
-- A runbook's waits are read by runbook whatever their status (its view,
-- the resume's look-up, prune): the index on runbook_id was partial (status
-- = 'active'), which a statement without that literal predicate cannot
-- use, and those read the whole table. It covers every invocation now;
-- the status is a filter on a runbook's few rows.
DROP INDEX invocation_records_runbook;
CREATE INDEX invocation_records_runbook ON invocation_records (runbook_id);

-- An invocation goes with its runbook, deleted by prune by runbook id. The
-- foreign key to its step made every deleted step look its invocations up
-- by step_id, which no index serves: one read of the whole table for each
-- step pruned. Invocations keep no foreign key now, as events and the
-- ledger do not.
ALTER TABLE invocation_records DROP CONSTRAINT invocation_records_step_id_fkey;

-- Prune and the retention sweep find finished runbooks by when they
-- finished, oldest first. A runbook's finished_at is written once, when it
-- finishes (and cleared if a retry reopens it).
CREATE INDEX runbooks_finished ON runbooks (finished_at) WHERE finished_at IS NOT NULL;

-- A receipt remembers the scope its key was derived in: prune keeps a
-- global key's receipt for ever (it is what keeps a later runbook from
-- repeating the effect) and deletes the others once their runbook's
-- lineage is gone and their window has passed, which it finds by age.
-- Receipts written before this column existed have no scope, and are
-- kept as a global one is. A B-tree, not a BRIN: under a generic plan
-- PostgreSQL estimates a third of the table for `created_at < $1` and
-- reads it whole rather than through a BRIN; receipts are written once
-- per effect, and their times only grow, so the index appends.
ALTER TABLE action_receipts ADD COLUMN scope text
    CHECK (scope IN ('runbook_step', 'runbook', 'global'));
CREATE INDEX action_receipts_created ON action_receipts (created_at);

-- The ledger is pruned by age, past its own window (rbd prune
-- --ledger-retention): the BRIN on finished_at gives way to a B-tree for
-- the same reason. Attempts finish in time order, so it appends too.
DROP INDEX step_attempts_finished;
CREATE INDEX step_attempts_finished ON step_attempts (finished_at);
