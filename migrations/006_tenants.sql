-- docs/design/semantics.md section 1: a runbook belongs to the tenant of the token
-- that submitted it. Runbooks stored before tenants existed are the
-- default tenant's. (Result cache entries carry their tenant since 004;
-- request and idempotency keys take the tenant into their derivation, so
-- two tenants never share a runbook or a receipt.)
ALTER TABLE runbooks ADD COLUMN tenant text NOT NULL DEFAULT 'default'
    CHECK (tenant <> '' AND length(tenant) <= 64);

-- A tenant's listing, newest first, optionally by status.
CREATE INDEX runbooks_tenant_created ON runbooks (tenant, created_at DESC, id DESC);

-- A notification signed with a tenant's webhook secret resolves only that
-- tenant's waits; one that arrives before its step parks keeps the tenant
-- for the park to check. NULL: a secret of no tenant, any wait.
ALTER TABLE completion_notifications ADD COLUMN tenant text;
