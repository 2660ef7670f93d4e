-- Declarative DAGs (docs/dags.md): immutable versions by digest, aliases that point at
-- them, and the join counters of the DAG runs the server drives itself.

-- A published definition in canonical form under its SHA-256; never updated.
CREATE TABLE dag_versions (
    namespace   TEXT    NOT NULL CONSTRAINT fk_dag_versions_namespace REFERENCES namespaces (name),
    digest      TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    definition  TEXT    NOT NULL,
    task_count  BIGINT NOT NULL,
    create_us   BIGINT NOT NULL,
    CONSTRAINT pk_dag_versions PRIMARY KEY (namespace, digest),
    CONSTRAINT ck_dag_versions_digest CHECK (length(digest) = 64),
    CONSTRAINT ck_dag_versions_task_count CHECK (task_count > 0)
);
-- dag list: the versions of one DAG, newest first.
CREATE INDEX ix_dag_versions_name ON dag_versions (namespace, name, create_us);

-- A name for one version of a DAG (prod, latest); moved by `dag alias`, audited. A version
-- an alias points at is not deleted (DeleteDagVersion refuses; server/history/dag_runs.py).
CREATE TABLE dag_aliases (
    namespace   TEXT    NOT NULL CONSTRAINT fk_dag_aliases_namespace REFERENCES namespaces (name),
    name        TEXT    NOT NULL,
    alias       TEXT    NOT NULL,
    digest      TEXT    NOT NULL,
    update_us   BIGINT NOT NULL,
    CONSTRAINT pk_dag_aliases PRIMARY KEY (namespace, name, alias),
    CONSTRAINT ck_dag_aliases_digest CHECK (length(digest) = 64)
);
CREATE INDEX ix_dag_aliases_version ON dag_aliases (namespace, digest);

-- The version a DAG run executes (NULL for a code workflow); set at start, never changed.
ALTER TABLE executions ADD COLUMN dag_digest TEXT;
-- A version referenced by a running execution cannot be deleted.
CREATE INDEX ix_executions_running_dag ON executions (namespace, dag_digest)
    WHERE dag_digest IS NOT NULL AND status = 'RUNNING';

-- One row per task of a running DAG run: its join counter (dependencies not yet
-- complete) and the events of its activity. Deleted when the run closes.
CREATE TABLE dag_run_tasks (
    namespace           TEXT    NOT NULL,
    run_id              TEXT    NOT NULL,
    task_id             TEXT    NOT NULL,
    waiting             BIGINT NOT NULL,
    scheduled_event_id  BIGINT NOT NULL DEFAULT 0,
    completed_event_id  BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT pk_dag_run_tasks PRIMARY KEY (run_id, task_id),
    CONSTRAINT ck_dag_run_tasks_waiting CHECK (waiting >= 0),
    CONSTRAINT ck_dag_run_tasks_scheduled_when_ready CHECK (scheduled_event_id = 0 OR waiting = 0),
    CONSTRAINT ck_dag_run_tasks_completed_after_scheduled CHECK (completed_event_id = 0 OR completed_event_id > scheduled_event_id)
);
