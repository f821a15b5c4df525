-- Issue 27: the inbox keeps one notification per correlation key in each
-- tenant's namespace (the tenant of the webhook secret that signed it;
-- NULL for a secret of no tenant). A notification signed by another
-- tenant's secret no longer takes the key from the tenant whose step will
-- park with it: each namespace has its own row, and a step consumes only
-- its tenant's (or one of no tenant).
ALTER TABLE completion_notifications DROP CONSTRAINT completion_notifications_correlation_key_key;
CREATE UNIQUE INDEX completion_notifications_key_tenant
    ON completion_notifications (correlation_key, (coalesce(tenant, '')));
