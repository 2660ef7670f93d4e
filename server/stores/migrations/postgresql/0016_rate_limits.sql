-- Rate limits per task queue and per concurrency key (docs/flow-control.md): a token
-- bucket per row, refilled and taken from inside the lease transaction with the row
-- locked, so every replica draws from the same bucket.
CREATE TABLE rate_limits (
    namespace   TEXT    NOT NULL,
    scope       TEXT    NOT NULL CONSTRAINT ck_rate_limits_scope CHECK (scope IN ('task_queue', 'concurrency_key')),
    name        TEXT    NOT NULL,
    per_second  DOUBLE PRECISION NOT NULL CONSTRAINT ck_rate_limits_per_second_positive CHECK (per_second > 0),
    tokens      DOUBLE PRECISION NOT NULL CONSTRAINT ck_rate_limits_tokens_not_negative CHECK (tokens >= 0),
    -- When tokens was last refilled.
    refill_us   BIGINT NOT NULL,
    update_us   BIGINT NOT NULL,
    CONSTRAINT pk_rate_limits PRIMARY KEY (namespace, scope, name)
);
-- How many rate limits the namespace has: leases look at the buckets only when it has any
-- (the engine caches the namespace row, so the default path reads nothing more).
ALTER TABLE namespaces ADD COLUMN rate_limits INTEGER NOT NULL DEFAULT 0
    CONSTRAINT ck_namespaces_rate_limits_not_negative CHECK (rate_limits >= 0);
