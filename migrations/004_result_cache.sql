-- docs/design/semantics.md section 4: the result cache. One entry per tenant and key
-- (SHA-256 of tenant, verb, the verb definition's hash and the canonical
-- resolved arguments), with the result and where it came from. tenant is
-- '' until tenants exist (docs/design/semantics.md section 1); the key already
-- includes it, and the primary key keeps tenants apart.
CREATE TABLE result_cache (
    tenant          text        NOT NULL DEFAULT '',
    key             text        NOT NULL,
    verb            text        NOT NULL,
    definition_hash text        NOT NULL,
    result          jsonb       NOT NULL,
    runbook_id      uuid        NOT NULL,  -- provenance: who computed it
    step_key        text        NOT NULL,
    attempt         integer     NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz,           -- NULL: policy reuse, never expires
    PRIMARY KEY (tenant, key)
);

-- The sweep deletes expired entries.
CREATE INDEX result_cache_expiry ON result_cache (expires_at) WHERE expires_at IS NOT NULL;
