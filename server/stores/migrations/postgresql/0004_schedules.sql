-- Schedules and the scheduler's leader lease (docs/schedules.md).

-- One row per schedule. spec, action and policy are JSON documents written at create
-- time; state is the scheduler's JSON (running and buffered fires, queued triggers and
-- backfills, recent actions, counters).
CREATE TABLE schedules (
    namespace        TEXT    NOT NULL CONSTRAINT fk_schedules_namespace REFERENCES namespaces (name),
    schedule_id      TEXT    NOT NULL,
    spec             TEXT    NOT NULL,
    action           TEXT    NOT NULL,
    policy           TEXT    NOT NULL,
    paused           INTEGER NOT NULL DEFAULT 0 CONSTRAINT ck_schedules_paused CHECK (paused IN (0, 1)),
    note             TEXT    NOT NULL DEFAULT '',
    state            TEXT    NOT NULL,
    -- Every nominal fire time up to here has been handled (fired, skipped or missed).
    cursor_us        BIGINT  NOT NULL,
    -- When the scheduler must look at the schedule next; NULL when nothing is ahead.
    next_action_us   BIGINT,
    create_us        BIGINT  NOT NULL,
    update_us        BIGINT  NOT NULL,
    -- Optimistic concurrency between API calls and the scheduler.
    version          BIGINT  NOT NULL CONSTRAINT ck_schedules_version_positive CHECK (version > 0),
    -- The highest scheduler fencing token that wrote this row; a lower one is refused.
    fencing_token    BIGINT  NOT NULL DEFAULT 0 CONSTRAINT ck_schedules_fencing_token_nonnegative CHECK (fencing_token >= 0),
    CONSTRAINT pk_schedules PRIMARY KEY (namespace, schedule_id)
);
-- The scheduler's pass: schedules with something due.
CREATE INDEX ix_schedules_next_action ON schedules (next_action_us) WHERE next_action_us IS NOT NULL;

-- Leader election: one row per elected role (`scheduler`). Taking over an expired lease
-- increments fencing_token, so the previous holder's writes can be told apart and refused.
CREATE TABLE leases (
    name           TEXT   NOT NULL CONSTRAINT pk_leases PRIMARY KEY,
    holder         TEXT   NOT NULL,
    fencing_token  BIGINT NOT NULL CONSTRAINT ck_leases_fencing_token_positive CHECK (fencing_token > 0),
    acquired_us    BIGINT NOT NULL,
    expires_us     BIGINT NOT NULL
);
