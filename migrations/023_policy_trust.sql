-- Policy follows the effect, and trust is earned (docs/design/semantics.md
-- section 17).
--
-- What the token that submitted a runbook could do: its verb scope
-- (verbs= globs) and its max_risk, as JSON; NULL for a token that may use
-- every verb at any risk (or no token). A compensation and an escalation
-- run on that token's behalf, so they are checked against it when they
-- run. A regeneration keeps the scope of whoever regenerated.
ALTER TABLE runbooks ADD COLUMN submitter_scope jsonb;

-- Earned trust: how many attempts of a verb a tenant's people have
-- approved at a gate with no rejection, and no failed attempt, since. A
-- policy's trust: {GLOB: {after: N}} lets the verb run unattended once the
-- count reaches N. Counts move inside the transaction of the decision (an
-- increment) or of the failed attempt (a reset), one row per tenant and
-- verb, so two at once never lose one.
CREATE TABLE verb_trust (
    tenant     text        NOT NULL,
    verb       text        NOT NULL,
    approvals  integer     NOT NULL DEFAULT 0 CHECK (approvals >= 0),
    -- resets counts the times it fell back to zero; reset_at the last.
    resets     integer     NOT NULL DEFAULT 0,
    reset_at   timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, verb)
);
