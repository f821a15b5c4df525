-- Issue 28, docs/design/semantics.md sections 10 and 11: the policy a
-- runbook was admitted under, and budgets.
--
-- policy_hash is the hash of the tenant's policy when the runbook was
-- admitted (NULL: admitted before policies, under none). budget is the
-- submission's own budget, which may only lower the policy's (NULL: none
-- asked).
ALTER TABLE runbooks ADD COLUMN policy_hash text, ADD COLUMN budget jsonb;

-- What a runbook has spent, kept beside it so that the check before each
-- attempt reads one row it loads anyway, not the ledger: added to in the
-- transaction that records an attempt reporting usage (most report none,
-- and write nothing here).
ALTER TABLE runbooks
    ADD COLUMN spent_cost_usd numeric NOT NULL DEFAULT 0,
    ADD COLUMN spent_tokens   bigint  NOT NULL DEFAULT 0,
    ADD COLUMN spent_credits  numeric NOT NULL DEFAULT 0;

UPDATE runbooks r SET spent_cost_usd = a.cost, spent_tokens = a.tokens, spent_credits = a.credits
FROM (SELECT runbook_id, coalesce(sum(cost_usd), 0) AS cost,
             coalesce(sum(coalesce(tokens_in, 0) + coalesce(tokens_out, 0)), 0) AS tokens,
             coalesce(sum(credits), 0) AS credits
      FROM step_attempts GROUP BY runbook_id) a
WHERE r.id = a.runbook_id;

-- A tenant's spend by day (UTC), the roll-up a tenant's day and month
-- budgets are checked against: a month is at most 31 rows of it. Written
-- with the attempts that report usage, as the runbook's spend is; like the
-- ledger it outlives rbd prune.
CREATE TABLE tenant_spend (
    tenant   text    NOT NULL,
    day      date    NOT NULL,
    cost_usd numeric NOT NULL DEFAULT 0,
    tokens   bigint  NOT NULL DEFAULT 0,
    credits  numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, day)
);

INSERT INTO tenant_spend (tenant, day, cost_usd, tokens, credits)
SELECT tenant, (finished_at AT TIME ZONE 'UTC')::date, coalesce(sum(cost_usd), 0),
       coalesce(sum(coalesce(tokens_in, 0) + coalesce(tokens_out, 0)), 0), coalesce(sum(credits), 0)
FROM step_attempts
GROUP BY 1, 2
HAVING coalesce(sum(cost_usd), 0) <> 0 OR coalesce(sum(coalesce(tokens_in, 0) + coalesce(tokens_out, 0)), 0) <> 0
    OR coalesce(sum(credits), 0) <> 0;

-- The budgets an admin set (rbd budget set), by tenant and scope: each
-- replaces the policy's for that tenant and scope. A NULL measure caps
-- nothing.
CREATE TABLE tenant_budgets (
    tenant     text        NOT NULL,
    scope      text        NOT NULL CHECK (scope IN ('runbook', 'day', 'month')),
    cost_usd   numeric     CHECK (cost_usd >= 0),
    tokens     bigint      CHECK (tokens >= 0),
    credits    numeric     CHECK (credits >= 0),
    updated_by text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, scope)
);

-- Every change of a tenant's budget, who made it and what it was before:
-- the audit of a mutation that belongs to no runbook.
CREATE TABLE budget_changes (
    id      bigserial   PRIMARY KEY,
    tenant  text        NOT NULL,
    scope   text        NOT NULL,
    actor   text        NOT NULL,
    before  jsonb,
    after   jsonb,
    at      timestamptz NOT NULL DEFAULT now()
);

-- POLICY_GATED and BUDGET_EXCEEDED are among v3's event types, which 014
-- admitted all at once.
