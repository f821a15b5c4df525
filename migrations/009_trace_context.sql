-- docs/design/semantics.md section 2: a runbook's place in a distributed trace, kept
-- once, on the runbook. Every id below it is derived, not stored: a step
-- attempt's attempt_id is UUIDv5 of runbook, step and attempt, and its
-- span id the first 8 bytes of that; the runbook's span id comes from its
-- id. Events and ledger rows take the trace id and correlation id from
-- here, so no step write grows.
--
-- trace_id: 32 hex digits, the submit's traceparent's or a new one.
-- parent_span_id: 16 hex digits, the submit's traceparent's span (NULL
--   when the runbook began its own trace).
-- trace_flags: the traceparent's flags (1: sampled).
-- tracestate: the submit's W3C tracestate, passed on as it came.
-- correlation_id: the submit's X-Correlation-Id, or the runbook's id.
-- Runbooks stored before this migration have NULLs: readers treat them as
-- a trace of their own whose id is the runbook's id, correlated by id.
ALTER TABLE runbooks
    ADD COLUMN trace_id       text,
    ADD COLUMN parent_span_id text,
    ADD COLUMN trace_flags    smallint,
    ADD COLUMN tracestate     text,
    ADD COLUMN correlation_id text;

-- A notification's traceparent: the resume it causes links to the sender's
-- span.
ALTER TABLE completion_notifications ADD COLUMN traceparent text;
