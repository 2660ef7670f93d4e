-- Remediation (docs/operations.md): every activity attempt on record, and the
-- dead-letter store of activities parked after their retries. Both hold rows of a
-- run: deleted with it by the retention sweeper, and dead letters when it closes.

-- One row per ended attempt of an activity, written in the transaction that records
-- the attempt's outcome (a completion, a failure retried or final, a timeout).
CREATE TABLE activity_attempts (
    namespace          TEXT    NOT NULL,
    run_id             TEXT    NOT NULL CONSTRAINT fk_activity_attempts_run REFERENCES executions (run_id),
    scheduled_event_id BIGINT  NOT NULL,
    attempt            BIGINT  NOT NULL CONSTRAINT ck_activity_attempts_attempt_positive CHECK (attempt > 0),
    activity_id        TEXT    NOT NULL,
    activity_type      TEXT    NOT NULL,
    identity           TEXT    NOT NULL,
    started_us         BIGINT,
    ended_us           BIGINT  NOT NULL,
    outcome            TEXT    NOT NULL CONSTRAINT ck_activity_attempts_outcome CHECK (outcome IN
                           ('completed', 'failed', 'timed_out', 'canceled')),
    -- The failure as JSON (flowforge.api.schema.failure_json); NULL when it completed.
    failure            TEXT,
    CONSTRAINT pk_activity_attempts PRIMARY KEY (run_id, scheduled_event_id, attempt)
);

-- A parked activity: its task row is gone and this row holds what it takes to schedule
-- it again (retry) or fail it into its workflow (discard). Written with the
-- ActivityTaskDeadLettered event, deleted with the event that records the decision.
CREATE TABLE dead_letters (
    id                 TEXT    NOT NULL CONSTRAINT pk_dead_letters PRIMARY KEY,
    namespace          TEXT    NOT NULL,
    run_id             TEXT    NOT NULL CONSTRAINT fk_dead_letters_run REFERENCES executions (run_id),
    workflow_id        TEXT    NOT NULL,
    workflow_type      TEXT    NOT NULL,
    activity_id        TEXT    NOT NULL,
    activity_type      TEXT    NOT NULL,
    task_queue         TEXT    NOT NULL,
    scheduled_event_id BIGINT  NOT NULL,
    attempt            BIGINT  NOT NULL CONSTRAINT ck_dead_letters_attempt_positive CHECK (attempt > 0),
    -- The failure that parked it (JSON) and its type, for filtering.
    failure            TEXT    NOT NULL,
    error_type         TEXT    NOT NULL,
    input              BYTEA,
    -- The task's options as scheduled (timeouts, retry policy) and its retry delays so far.
    options            TEXT    NOT NULL,
    retry_delays       TEXT    NOT NULL,
    dead_lettered_us   BIGINT  NOT NULL,
    CONSTRAINT uq_dead_letters_run_activity UNIQUE (run_id, activity_id)
);
-- dlq list: a namespace's dead letters, oldest first; depth per activity type.
CREATE INDEX ix_dead_letters_namespace_time ON dead_letters (namespace, dead_lettered_us, id);
