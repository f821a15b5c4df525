-- docs/design/semantics.md section 6: a regenerated runbook records where it came
-- from. Its root's id enters the idempotency keys of its steps, so that an
-- effect the root had (a send) returns its receipt instead of happening
-- again; its generation enters the keys of the steps that regenerate.
-- The original of a lineage has no root or parent (it is its own root) and
-- generation 0. No foreign keys: pruning an old parent must not take its
-- descendants' lineage with it, and the ids stay meaningful as key
-- material after the rows are gone.
ALTER TABLE runbooks
    ADD COLUMN lineage_root   uuid,
    ADD COLUMN lineage_parent uuid,
    ADD COLUMN generation     integer NOT NULL DEFAULT 0 CHECK (generation >= 0),
    ADD CONSTRAINT runbooks_lineage_check
        CHECK ((generation = 0) = (lineage_root IS NULL AND lineage_parent IS NULL));

-- A lineage's runbooks, for a view of the family.
CREATE INDEX runbooks_lineage_root ON runbooks (lineage_root) WHERE lineage_root IS NOT NULL;

ALTER TABLE runbook_mutations DROP CONSTRAINT runbook_mutations_kind_check;
ALTER TABLE runbook_mutations ADD CONSTRAINT runbook_mutations_kind_check
    CHECK (kind IN ('extend', 'retry', 'resolve', 'close', 'regenerate'));

-- docs/design/semantics.md section 8: an escalating wait runs its verb's
-- timeouts.escalation verb (a page). Its state, like a compensation's:
-- pending, running, complete or failed; NULL when there is none.
ALTER TABLE runbook_steps
    ADD COLUMN escalation_status text
        CHECK (escalation_status IN ('pending', 'running', 'complete', 'failed')),
    ADD COLUMN escalation_error  text;
