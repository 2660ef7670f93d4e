-- FlowForge schema v1 (PostgreSQL). Mirrors migrations/sqlite/0001_initial.sql table
-- for table, column for column and name for name (tests/unit/test_migrations.py checks
-- it). Times are BIGINT microseconds since the Unix epoch; JSON documents stay TEXT so
-- both dialects store the same bytes; payloads are BYTEA.
-- Constraint and index names are explicit so migrations and docs can name them.

CREATE TABLE server_metadata (
    key   TEXT NOT NULL CONSTRAINT pk_server_metadata PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE namespaces (
    name         TEXT    NOT NULL CONSTRAINT pk_namespaces PRIMARY KEY,
    description  TEXT    NOT NULL DEFAULT '',
    retention_s  INTEGER NOT NULL CONSTRAINT ck_namespaces_retention_positive CHECK (retention_s > 0),
    create_us    BIGINT  NOT NULL
);

CREATE TABLE executions (
    namespace            TEXT    NOT NULL CONSTRAINT fk_executions_namespace REFERENCES namespaces (name),
    run_id               TEXT    NOT NULL CONSTRAINT pk_executions PRIMARY KEY,
    workflow_id          TEXT    NOT NULL,
    workflow_type        TEXT    NOT NULL,
    task_queue           TEXT    NOT NULL,
    status               TEXT    NOT NULL CONSTRAINT ck_executions_status CHECK (status IN
                             ('RUNNING', 'COMPLETED', 'FAILED', 'CANCELED', 'TERMINATED', 'CONTINUED_AS_NEW', 'TIMED_OUT')),
    -- The next history event id; history holds 1 .. next_event_id - 1.
    next_event_id        BIGINT  NOT NULL CONSTRAINT ck_executions_next_event_id_positive CHECK (next_event_id > 1),
    -- Optimistic concurrency: every update checks and bumps it.
    version              BIGINT  NOT NULL CONSTRAINT ck_executions_version_positive CHECK (version > 0),
    start_us             BIGINT  NOT NULL,
    close_us             BIGINT,
    -- Outstanding workflow task: NONE, SCHEDULED (a task row waits) or STARTED (leased).
    wft_state            TEXT    NOT NULL CONSTRAINT ck_executions_wft_state CHECK (wft_state IN ('NONE', 'SCHEDULED', 'STARTED')),
    wft_attempt          INTEGER NOT NULL CONSTRAINT ck_executions_wft_attempt_positive CHECK (wft_attempt > 0),
    wft_scheduled_us     BIGINT,
    wft_started_us       BIGINT,
    wft_scheduled_event_id BIGINT NOT NULL DEFAULT 0,
    wft_started_event_id BIGINT  NOT NULL DEFAULT 0,
    wft_timeout_s        DOUBLE PRECISION NOT NULL CONSTRAINT ck_executions_wft_timeout_positive CHECK (wft_timeout_s > 0),
    last_wft_failure     TEXT,
    -- Events that arrived while a workflow task was started, appended when it closes.
    buffered_events      TEXT    NOT NULL DEFAULT '[]',
    -- Execution / run timeout, if any: the reaper closes the run as TIMED_OUT then.
    deadline_us          BIGINT,
    deadline_kind        TEXT,
    cancel_requested     INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT ck_executions_close_time CHECK ((status = 'RUNNING') = (close_us IS NULL)),
    CONSTRAINT ck_executions_closed_has_no_wft CHECK (status = 'RUNNING' OR wft_state = 'NONE')
);
-- At most one running execution per workflow id (ALREADY_EXISTS otherwise).
CREATE UNIQUE INDEX ux_executions_running_workflow_id
    ON executions (namespace, workflow_id) WHERE status = 'RUNNING';
-- get_workflow_handle(id): the latest run of a workflow id.
CREATE INDEX ix_executions_workflow_id_start ON executions (namespace, workflow_id, start_us);
-- list_workflows(): newest first, keyset-paginated.
CREATE INDEX ix_executions_namespace_start ON executions (namespace, start_us, run_id);
-- The reaper: running executions with a timeout.
CREATE INDEX ix_executions_deadline ON executions (deadline_us) WHERE status = 'RUNNING' AND deadline_us IS NOT NULL;

CREATE TABLE history_events (
    namespace   TEXT    NOT NULL,
    run_id      TEXT    NOT NULL CONSTRAINT fk_history_events_run REFERENCES executions (run_id),
    event_id    BIGINT  NOT NULL CONSTRAINT ck_history_events_event_id_positive CHECK (event_id > 0),
    event_type  TEXT    NOT NULL,
    event_us    BIGINT  NOT NULL,
    attributes  TEXT    NOT NULL,
    CONSTRAINT pk_history_events PRIMARY KEY (run_id, event_id)
);

CREATE TABLE request_ids (
    namespace   TEXT   NOT NULL,
    request_id  TEXT   NOT NULL,
    run_id      TEXT   NOT NULL CONSTRAINT fk_request_ids_run REFERENCES executions (run_id),
    create_us   BIGINT NOT NULL,
    CONSTRAINT pk_request_ids PRIMARY KEY (namespace, request_id)
);

-- Workflow and activity tasks: the transactional outbox. A row exists exactly while the
-- task is outstanding; it is written in the same transaction as the event that implies it.
CREATE TABLE tasks (
    task_id          BIGINT  GENERATED ALWAYS AS IDENTITY CONSTRAINT pk_tasks PRIMARY KEY,
    namespace        TEXT    NOT NULL,
    run_id           TEXT    NOT NULL CONSTRAINT fk_tasks_run REFERENCES executions (run_id),
    workflow_id      TEXT    NOT NULL,
    workflow_type    TEXT    NOT NULL,
    kind             TEXT    NOT NULL CONSTRAINT ck_tasks_kind CHECK (kind IN ('WORKFLOW', 'ACTIVITY')),
    task_queue       TEXT    NOT NULL,
    state            TEXT    NOT NULL CONSTRAINT ck_tasks_state CHECK (state IN ('PENDING', 'LEASED')),
    -- A pending task is handed out no earlier than this (retry backoff).
    visible_us       BIGINT  NOT NULL,
    lease_expires_us BIGINT,
    -- Incremented by every lease; a completion must present the current value.
    fencing_token    BIGINT  NOT NULL CONSTRAINT ck_tasks_fencing_token_nonnegative CHECK (fencing_token >= 0),
    attempt          INTEGER NOT NULL CONSTRAINT ck_tasks_attempt_positive CHECK (attempt > 0),
    scheduled_event_id BIGINT NOT NULL DEFAULT 0,
    activity_id      TEXT,
    activity_type    TEXT,
    input            BYTEA,
    options          TEXT    NOT NULL DEFAULT '{}',
    scheduled_us     BIGINT  NOT NULL,
    started_us       BIGINT,
    -- Schedule-to-start / schedule-to-close deadline while pending, if any.
    pending_deadline_us BIGINT,
    schedule_to_close_deadline_us BIGINT,
    last_heartbeat_us BIGINT,
    heartbeat_details BYTEA,
    last_failure     TEXT,
    retry_delays     TEXT    NOT NULL DEFAULT '[]',
    identity         TEXT    NOT NULL DEFAULT '',
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT ck_tasks_lease_iff_leased CHECK ((state = 'LEASED') = (lease_expires_us IS NOT NULL)),
    CONSTRAINT ck_tasks_activity_fields CHECK (kind = 'WORKFLOW' OR (activity_id IS NOT NULL AND activity_type IS NOT NULL))
);
-- Poll: the oldest visible pending task of a queue. Partial, so it holds in-flight work only.
CREATE INDEX ix_tasks_pending_queue ON tasks (namespace, kind, task_queue, visible_us, task_id) WHERE state = 'PENDING';
-- Reaper: expired leases.
CREATE INDEX ix_tasks_leased_expiry ON tasks (lease_expires_us) WHERE state = 'LEASED';
-- Reaper: schedule-to-start / schedule-to-close of tasks nobody picked up.
CREATE INDEX ix_tasks_pending_deadline ON tasks (pending_deadline_us) WHERE state = 'PENDING' AND pending_deadline_us IS NOT NULL;
-- Per-run lookups: describe(), cancel an activity, close a run.
CREATE UNIQUE INDEX ux_tasks_run_activity ON tasks (run_id, activity_id) WHERE kind = 'ACTIVITY';
-- At most one outstanding workflow task per run.
CREATE UNIQUE INDEX ux_tasks_run_workflow_task ON tasks (run_id) WHERE kind = 'WORKFLOW';

CREATE TABLE timers (
    namespace        TEXT    NOT NULL,
    run_id           TEXT    NOT NULL CONSTRAINT fk_timers_run REFERENCES executions (run_id),
    timer_id         TEXT    NOT NULL,
    started_event_id BIGINT  NOT NULL CONSTRAINT ck_timers_started_event_id_positive CHECK (started_event_id > 0),
    fire_us          BIGINT  NOT NULL,
    CONSTRAINT pk_timers PRIMARY KEY (run_id, timer_id)
);
-- Reaper: due timers.
CREATE INDEX ix_timers_fire ON timers (fire_us);

INSERT INTO namespaces (name, description, retention_s, create_us)
VALUES ('default', 'The namespace that always exists.', 2592000, 0);
