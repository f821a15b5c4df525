-- Issue 31: a runbook's name, for the people who look at it: the `name`
-- given at submit, else its source file's name without the extension
-- (kyc-onboarding.rbk is "kyc-onboarding"); a regeneration keeps its
-- parent's. It is a label, not part of the request: two submissions that
-- differ only in their name are one runbook. Runbooks stored before it
-- have none (NULL), and the console shows their id.
ALTER TABLE runbooks ADD COLUMN name text
    CHECK (name IS NULL OR (name <> '' AND length(name) <= 200));

-- The console's inbox lists the runbooks that wait on a person: running,
-- failed and partial ones (runbooks_status_created finds them), and
-- finished drafts whose skipped steps wait to run for real. This finds
-- the drafts without reading every complete runbook of history; it holds
-- only drafts, so the rest of the table's writes do not touch it.
CREATE INDEX runbooks_drafts_created ON runbooks (created_at DESC, id DESC) WHERE mode = 'draft_only';
