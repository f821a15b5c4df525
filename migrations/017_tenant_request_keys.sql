-- Issue 27: every tenant's request keys live in a namespace of their own,
-- "tenant:<name>:". The default tenant's were unprefixed, so a
-- default-tenant token could send "Idempotency-Key: tenant:acme:K" and
-- land on acme's runbook. Its stored keys take the prefix now, so that
-- its repeats still find their runbooks (runbook ids are stored, and do
-- not change). A default key that already began "tenant:" was chosen by a
-- default-tenant caller, and so belongs, prefixed, to the default tenant
-- too: the new derivation gives it the same prefix.
UPDATE runbooks SET request_key = 'tenant:default:' || request_key WHERE tenant = 'default';
