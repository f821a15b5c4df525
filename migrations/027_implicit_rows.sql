-- docs/design/semantics.md section 3 and docs/design/runtime.md, "The job
-- ledger and the edges": an attempt that succeeded, used nothing, touched no cache and
-- ended with its step's completion says nothing its step's row does not
-- (runbook, step, verb, attempt number, start and end); it is no longer a
-- row of its own, but four columns of that step row, set by the update
-- that completes the step. Every other attempt (failed, parked, resumed,
-- a cache hit or miss, one that reported usage) is a row as before.
--
-- step_attempts stays the ledger readers query, one row per attempt: a
-- view of the stored rows and the steps' implicit ones, as step_leases
-- became a view of the steps' lease columns (008). The stored rows keep
-- their table under a new name.
ALTER TABLE step_attempts RENAME TO step_attempt_rows;
ALTER INDEX step_attempts_pkey RENAME TO step_attempt_rows_pkey;
ALTER INDEX step_attempts_finished RENAME TO step_attempt_rows_finished;

-- Set together, only on a completed step whose attempt is implicit: the
-- attempt's id (a UUIDv5 PostgreSQL cannot compute without pgcrypto), the
-- worker that recorded it, and the hashes of its arguments and result.
-- No index covers them: the update that completes a step stays HOT.
ALTER TABLE runbook_steps
    ADD COLUMN ledger_attempt_id  uuid,
    ADD COLUMN ledger_worker      text,
    ADD COLUMN ledger_args_hash   text,
    ADD COLUMN ledger_result_hash text;

-- The implicit row of a step, as the machine would have stored it: the
-- runbook's tenant, actor and trace ids (its own id's when none was
-- given, machine.CorrelationIDOf and TraceIDOf), the attempt's span id
-- (the first 8 bytes of its id, machine.AttemptSpanID).
CREATE FUNCTION implicit_attempt_trace_id(r_id uuid, stored text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN stored ~ '^[0-9a-f]{32}$' AND stored <> repeat('0', 32) THEN stored
                ELSE replace(r_id::text, '-', '') END;

CREATE VIEW step_attempts AS
    SELECT attempt_id, runbook_id, tenant, actor, step_key, verb, attempt, worker_id, started_at,
           finished_at, outcome, error_code, cache, correlation_id, trace_id, span_id, tokens_in,
           tokens_out, model, cost_usd, credits, args_hash, result_hash
    FROM step_attempt_rows
    UNION ALL
    SELECT s.ledger_attempt_id, s.runbook_id, r.tenant, r.actor, s.key, s.verb, s.attempt, s.ledger_worker,
           s.started_at, s.finished_at, 'succeeded'::text, NULL::text, 'off'::text,
           coalesce(nullif(r.correlation_id, ''), r.id::text), implicit_attempt_trace_id(r.id, r.trace_id),
           encode(substring(uuid_send(s.ledger_attempt_id) FROM 1 FOR 8), 'hex'), NULL::bigint,
           NULL::bigint, NULL::text, NULL::numeric, NULL::numeric, s.ledger_args_hash, s.ledger_result_hash
    FROM runbook_steps s JOIN runbooks r ON r.id = s.runbook_id
    WHERE s.ledger_attempt_id IS NOT NULL;

-- A step row that holds its attempt's ledger row must not lose it: when
-- the step moves on (a for-each's template reopened, any change of its
-- status, attempt, verb or times) or is deleted (rbd prune), the row is
-- written out to step_attempt_rows first, as it stood. The ledger
-- outlives the steps. Nothing the machine does to a plain completed step
-- fires these: the update triggers only on a change the implicit row
-- would show.
CREATE FUNCTION write_out_implicit_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO step_attempt_rows (attempt_id, runbook_id, tenant, actor, step_key, verb, attempt,
        worker_id, started_at, finished_at, outcome, error_code, cache, correlation_id, trace_id,
        span_id, args_hash, result_hash)
    SELECT OLD.ledger_attempt_id, OLD.runbook_id, r.tenant, r.actor, OLD.key, OLD.verb, OLD.attempt,
        OLD.ledger_worker, OLD.started_at, OLD.finished_at, 'succeeded', NULL, 'off',
        coalesce(nullif(r.correlation_id, ''), r.id::text), implicit_attempt_trace_id(r.id, r.trace_id),
        encode(substring(uuid_send(OLD.ledger_attempt_id) FROM 1 FOR 8), 'hex'),
        OLD.ledger_args_hash, OLD.ledger_result_hash
    FROM runbooks r WHERE r.id = OLD.runbook_id
    ON CONFLICT (runbook_id, step_key, attempt) DO NOTHING;
    IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM step_attempt_rows a
            WHERE a.runbook_id = OLD.runbook_id AND a.step_key = OLD.key AND a.attempt = OLD.attempt) THEN
        -- Its runbook is gone already (a delete that cascaded from it):
        -- the row cannot be written, and must not vanish unseen.
        RAISE EXCEPTION 'the ledger row of step % of runbook % cannot be written out: its runbook is gone',
            OLD.key, OLD.runbook_id;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    IF NEW.ledger_attempt_id IS NOT DISTINCT FROM OLD.ledger_attempt_id THEN
        NEW.ledger_attempt_id := NULL;
        NEW.ledger_worker := NULL;
        NEW.ledger_args_hash := NULL;
        NEW.ledger_result_hash := NULL;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER runbook_steps_write_out_attempt_on_update
    BEFORE UPDATE ON runbook_steps FOR EACH ROW
    WHEN (OLD.ledger_attempt_id IS NOT NULL AND (
        NEW.status <> OLD.status OR NEW.attempt <> OLD.attempt OR NEW.verb <> OLD.verb
        OR NEW.key <> OLD.key OR NEW.runbook_id <> OLD.runbook_id
        OR NEW.started_at IS DISTINCT FROM OLD.started_at OR NEW.finished_at IS DISTINCT FROM OLD.finished_at
        OR NEW.ledger_attempt_id <> OLD.ledger_attempt_id))
    EXECUTE FUNCTION write_out_implicit_attempt();

-- rbd prune deletes a runbook's steps before the runbook (durable:
-- pruneRowsSQL), so the runbook's row is there to read.
CREATE TRIGGER runbook_steps_write_out_attempt_on_delete
    BEFORE DELETE ON runbook_steps FOR EACH ROW
    WHEN (OLD.ledger_attempt_id IS NOT NULL)
    EXECUTE FUNCTION write_out_implicit_attempt();

-- docs/design/runtime.md, "The job ledger and the edges": a runbook's edges are its stored
-- plan's (compiler.Plan's "edges"): a submission's, a regeneration's, and
-- those an extension or a for-each's expansion adds, written with the
-- grown plan in the same transaction. Stored again as rows they cost a
-- submission a row per edge and an expansion one per element, and
-- nothing in rbd reads them. runbook_edges stays the canonical dependency
-- graph readers query, a view of the plans' edges; runbook_edge_rows
-- keeps only edges a plan does not hold (none that rbd writes; a store's
-- caller may still pass some, rbtype.NewRunbook.EdgesInPlan).
ALTER TABLE runbook_edges RENAME TO runbook_edge_rows;
ALTER INDEX runbook_edges_pkey RENAME TO runbook_edge_rows_pkey;

-- Rows the plans hold already go; any other row stays.
DELETE FROM runbook_edge_rows x
USING (SELECT r.id, e ->> 'from' AS from_key, e ->> 'to' AS to_key, e ->> 'kind' AS kind
       FROM runbooks r, jsonb_array_elements(CASE jsonb_typeof(r.plan -> 'edges') WHEN 'array' THEN r.plan -> 'edges' ELSE '[]' END) e) p
WHERE p.id = x.runbook_id AND p.from_key = x.from_key AND p.to_key = x.to_key AND p.kind = x.kind;

CREATE VIEW runbook_edges AS
    SELECT r.id AS runbook_id, e ->> 'to' AS to_key, e ->> 'from' AS from_key, e ->> 'kind' AS kind
    FROM runbooks r, jsonb_array_elements(CASE jsonb_typeof(r.plan -> 'edges') WHEN 'array' THEN r.plan -> 'edges' ELSE '[]' END) e
    UNION ALL
    SELECT runbook_id, to_key, from_key, kind FROM runbook_edge_rows;
