-- Issue 15: the event ledger keeps one index. Every query reads a
-- runbook's events by (runbook_id, id) (the events endpoint, its live
-- follow, prune); none looks an event up by id alone. The primary key on
-- id was a second B-tree entry, and its WAL, for each of the two or more
-- events every step writes. id is still unique: an identity column only
-- ever hands a value out once, and nothing else writes it (GENERATED
-- ALWAYS refuses a value from outside).
ALTER TABLE runbook_events DROP CONSTRAINT runbook_events_pkey;
