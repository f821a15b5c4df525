-- docs/design/semantics.md section 14: schedules. A schedule submits a
-- runbook at each tick of its cron expression, evaluated in its IANA time
-- zone, under the request key schedule:<id>:<tick in UTC>, so that any
-- number of daemons make one runbook per tick. next_fire_at is the next
-- tick to fire, in UTC; the daemon that fires it moves it on in the same
-- transaction, holding the row's lock, so that another daemon skips it.
CREATE TABLE schedules (
    id              uuid        PRIMARY KEY,
    tenant          text        NOT NULL,
    name            text        NOT NULL,
    cron            text        NOT NULL,
    timezone        text        NOT NULL,
    -- What each tick submits: a source compiled at every tick with the
    -- catalogue of the day, or a plan checked against it.
    source          text,
    plan            jsonb,
    filename        text        NOT NULL,
    inputs          jsonb       NOT NULL DEFAULT '{}',
    mode            text        NOT NULL DEFAULT 'execute' CHECK (mode IN ('execute', 'dry_run', 'draft_only')),
    overlap         text        NOT NULL CHECK (overlap IN ('skip', 'allow')),
    catch_up        text        NOT NULL CHECK (catch_up IN ('none', 'latest')),
    paused          boolean     NOT NULL DEFAULT false,
    -- Who made it, and the scope of the token they used: each tick runs
    -- with it, and is checked against it again.
    actor           text        NOT NULL DEFAULT '',
    scope           jsonb       NOT NULL DEFAULT '{}',
    next_fire_at    timestamptz NOT NULL,
    last_tick_at    timestamptz,
    last_runbook_id uuid,       -- no foreign key: a pruned runbook leaves its schedule
    last_error      text,
    skipped         bigint      NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((source IS NULL) <> (plan IS NULL)),
    UNIQUE (tenant, name)
);

-- The sweep's question: which schedules are due.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE NOT paused;
