-- Issue 27: runbook ids and correlation keys are keyed hashes (HMAC-SHA256)
-- of what they name, under a key made here once, at random, and never
-- shown: without it nobody can work out the id of a runbook from its
-- request, nor the correlation key of a wait that has not started (and
-- notify it first). It lives in the database rather than in a file so that
-- every rbd on the schema derives alike without a file to copy and keep
-- in step (a worker with another key would give a reclaimed wait another
-- correlation key), and it is as private as the rows it protects: only
-- rbd's role reads this schema. gen_random_uuid() draws from the server's
-- strong random source; two of them give 244 random bits.
CREATE TABLE server_keys (
    name       text        PRIMARY KEY CHECK (name IN ('derivation')),
    key        bytea       NOT NULL CHECK (length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO server_keys (name, key)
VALUES ('derivation', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
