-- Circuit breakers per activity type (docs/flow-control.md): a breaker row is read and
-- locked in the lease transaction of a task of its type (open: the task is held back) and
-- in the transaction of every outcome of that type (the counts of the current window).
CREATE TABLE breakers (
    namespace       TEXT    NOT NULL,
    activity_type   TEXT    NOT NULL,
    failure_rate    REAL NOT NULL CONSTRAINT ck_breakers_failure_rate_range CHECK (failure_rate > 0 AND failure_rate <= 1),
    min_calls       INTEGER NOT NULL CONSTRAINT ck_breakers_min_calls_positive CHECK (min_calls > 0),
    window_s        REAL NOT NULL CONSTRAINT ck_breakers_window_positive CHECK (window_s > 0),
    open_s          REAL NOT NULL CONSTRAINT ck_breakers_open_positive CHECK (open_s > 0),
    state           TEXT    NOT NULL CONSTRAINT ck_breakers_state CHECK (state IN ('closed', 'open', 'half_open')),
    -- When the breaker entered its state.
    since_us        INTEGER NOT NULL,
    window_start_us INTEGER NOT NULL,
    successes       INTEGER NOT NULL CONSTRAINT ck_breakers_successes_not_negative CHECK (successes >= 0),
    failures        INTEGER NOT NULL CONSTRAINT ck_breakers_failures_not_negative CHECK (failures >= 0),
    -- 1 while the one probe of a half-open breaker is leased.
    probe_in_flight INTEGER NOT NULL DEFAULT 0 CONSTRAINT ck_breakers_probe_in_flight CHECK (probe_in_flight IN (0, 1)),
    reason          TEXT    NOT NULL DEFAULT '',
    update_us       INTEGER NOT NULL,
    CONSTRAINT pk_breakers PRIMARY KEY (namespace, activity_type)
);
-- How many breakers the namespace has: leases and outcomes look at them only when it has
-- any (the engine caches the namespace row, so the default path reads nothing more).
ALTER TABLE namespaces ADD COLUMN breakers INTEGER NOT NULL DEFAULT 0
    CONSTRAINT ck_namespaces_breakers_not_negative CHECK (breakers >= 0);
