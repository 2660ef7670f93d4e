-- Queries in flight: the rendezvous between the replica that took a QueryWorkflow call
-- and the worker that answers it (any replica may serve either side). A row lives
-- from the call until its caller read the answer or gave up; expires_us bounds a row
-- whose caller's server died, and the next query sweeps it.
CREATE TABLE workflow_queries (
    query_id       BIGINT  GENERATED ALWAYS AS IDENTITY CONSTRAINT pk_workflow_queries PRIMARY KEY,
    namespace      TEXT    NOT NULL,
    run_id         TEXT    NOT NULL CONSTRAINT fk_workflow_queries_run REFERENCES executions (run_id),
    workflow_id    TEXT    NOT NULL,
    workflow_type  TEXT    NOT NULL,
    task_queue     TEXT    NOT NULL,
    query_type     TEXT    NOT NULL,
    args           BYTEA   NOT NULL,
    state          TEXT    NOT NULL CONSTRAINT ck_workflow_queries_state CHECK (state IN ('PENDING', 'ANSWERED')),
    -- A pending query is handed to a worker no earlier than this; leasing it pushes
    -- this out by the lease, so a worker that died is replaced.
    visible_us     BIGINT  NOT NULL,
    -- Incremented by every lease; only the current lease may answer.
    fencing_token  BIGINT  NOT NULL CONSTRAINT ck_workflow_queries_fencing_token_nonnegative CHECK (fencing_token >= 0),
    answer         BYTEA,
    error          TEXT,
    create_us      BIGINT  NOT NULL,
    expires_us     BIGINT  NOT NULL,
    CONSTRAINT ck_workflow_queries_answered CHECK (state = 'PENDING' OR answer IS NOT NULL OR error IS NOT NULL)
);
-- Poll: the oldest visible pending query of a task queue. Partial: in-flight queries only.
CREATE INDEX ix_workflow_queries_pending ON workflow_queries (namespace, task_queue, visible_us, query_id) WHERE state = 'PENDING';
-- The sweep of rows whose caller went away.
CREATE INDEX ix_workflow_queries_expires ON workflow_queries (expires_us);
