-- Budgets hold under concurrency for verbs that declare no cost too
-- (docs/design/semantics.md, "Budgets hold under concurrency").
--
-- An attempt whose verb declares no cost reserves nothing and may spend
-- anything, so under a tenant's day or month cost cap such attempts run
-- one at a time: the cap is then passed by one attempt's spend at most.
-- Within a runbook, and among the runbooks one advance loads, the advance
-- sees the running steps; across the tenant's other runbooks it reads
-- this table, under the tenant's budget lock (durable/budgets.go).
--
-- A row per runbook that has such an attempt running, or waits for the
-- tenant's to end: running counts its attempts running (never below
-- zero); waiting says it holds a step back for another runbook's, and is
-- woken, its flag cleared, as soon as one of the tenant's ends. A row
-- with neither is deleted. Only runbooks of tenants with a day or month
-- cost cap ever have one; a finished runbook's row counts for nothing
-- (the read joins unfinished runbooks), and goes with the runbook.
CREATE TABLE tenant_unreserved_attempts (
    runbook_id uuid    PRIMARY KEY REFERENCES runbooks (id) ON DELETE CASCADE,
    tenant     text    NOT NULL,
    running    integer NOT NULL DEFAULT 0 CHECK (running >= 0),
    waiting    boolean NOT NULL DEFAULT false
);

CREATE INDEX tenant_unreserved_attempts_tenant ON tenant_unreserved_attempts (tenant);
