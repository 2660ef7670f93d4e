-- Child workflows: one row per child a run started that has not closed yet. The row
-- is written in the transaction that creates the child's run and records
-- StartChildWorkflowExecutionInitiated in the parent, and deleted in the one that
-- closes the child and delivers its outcome to the parent (or applies the parent
-- close policy), so an outcome is delivered exactly once.
CREATE TABLE child_executions (
    namespace           TEXT    NOT NULL,
    parent_run_id       TEXT    NOT NULL CONSTRAINT fk_child_executions_parent_run REFERENCES executions (run_id),
    -- The parent's StartChildWorkflowExecutionInitiated event.
    initiated_event_id  BIGINT  NOT NULL CONSTRAINT ck_child_executions_initiated_event_id_positive CHECK (initiated_event_id > 0),
    workflow_id         TEXT    NOT NULL,
    -- The child's current run: continue-as-new moves it to the new run.
    run_id              TEXT    NOT NULL CONSTRAINT fk_child_executions_run REFERENCES executions (run_id),
    workflow_type       TEXT    NOT NULL,
    parent_close_policy TEXT    NOT NULL CONSTRAINT ck_child_executions_parent_close_policy CHECK (parent_close_policy IN
                            ('TERMINATE', 'ABANDON', 'REQUEST_CANCEL')),
    CONSTRAINT pk_child_executions PRIMARY KEY (parent_run_id, initiated_event_id)
);
-- A closing run finds the parent to notify.
CREATE UNIQUE INDEX ux_child_executions_run ON child_executions (run_id);
