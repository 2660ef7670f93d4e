-- Event triggers (docs/events.md): subscriptions that start a workflow for each
-- matching published event, and the dedupe ledger that makes a re-published event
-- (same namespace, source and id) start nothing while its row is live.

CREATE TABLE event_triggers (
    namespace          TEXT    NOT NULL CONSTRAINT fk_event_triggers_namespace REFERENCES namespaces (name),
    trigger_id         TEXT    NOT NULL,
    event_type         TEXT    NOT NULL,
    -- JSON list of canonical filter conditions, all of which must hold.
    filter             TEXT    NOT NULL DEFAULT '[]',
    -- JSON list of event paths, one per workflow argument.
    input_paths        TEXT    NOT NULL DEFAULT '[]',
    workflow_type      TEXT    NOT NULL,
    task_queue         TEXT    NOT NULL,
    workflow_id_prefix TEXT    NOT NULL,
    execution_timeout_s REAL   NOT NULL DEFAULT 0,
    run_timeout_s      REAL    NOT NULL DEFAULT 0,
    task_timeout_s     REAL    NOT NULL DEFAULT 0,
    create_us          INTEGER NOT NULL,
    CONSTRAINT pk_event_triggers PRIMARY KEY (namespace, trigger_id)
);
-- PublishEvent: the triggers subscribed to one event type.
CREATE INDEX ix_event_triggers_type ON event_triggers (namespace, event_type);

-- One row per accepted event while its dedupe window lasts; written in the same
-- transaction as the executions it started. The primary key is the guard: a second
-- publish of (namespace, source, event_id) finds the row and starts nothing.
CREATE TABLE event_dedupe (
    namespace   TEXT    NOT NULL CONSTRAINT fk_event_dedupe_namespace REFERENCES namespaces (name),
    source      TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    publish_us  INTEGER NOT NULL,
    expires_us  INTEGER NOT NULL,
    -- JSON list of {trigger_id, workflow_id, run_id, started} the event led to.
    outcome     TEXT    NOT NULL DEFAULT '[]',
    CONSTRAINT pk_event_dedupe PRIMARY KEY (namespace, source, event_id),
    CONSTRAINT ck_event_dedupe_window CHECK (expires_us > publish_us)
);
-- The sweeper deletes expired rows oldest first.
CREATE INDEX ix_event_dedupe_expires ON event_dedupe (expires_us);
