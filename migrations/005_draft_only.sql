-- docs/design/semantics.md section 7: a runbook may be submitted draft_only.
ALTER TABLE runbooks DROP CONSTRAINT runbooks_mode_check;
ALTER TABLE runbooks ADD CONSTRAINT runbooks_mode_check
    CHECK (mode IN ('execute', 'dry_run', 'draft_only'));
