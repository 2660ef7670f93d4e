-- Workflow lifecycle events to relay to a message broker (flowforge.contrib.azure.
-- ServiceBusLifecyclePublisher), a transactional outbox: the trigger writes a row in
-- the transaction that appends the event, and the relay deletes it once sent. Rows are
-- written only while the outbox is enabled (server_metadata key 'lifecycle_outbox',
-- set by the relay), so a server without a relay pays nothing but the trigger's check.
CREATE TABLE lifecycle_outbox (
    -- Insertion order; the relay sends oldest first.
    sequence      INTEGER NOT NULL CONSTRAINT pk_lifecycle_outbox PRIMARY KEY,
    namespace     TEXT    NOT NULL,
    workflow_id   TEXT    NOT NULL,
    workflow_type TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    event_id      BIGINT  NOT NULL CONSTRAINT ck_lifecycle_outbox_event_id_positive CHECK (event_id > 0),
    event_type    TEXT    NOT NULL,
    event_us      BIGINT  NOT NULL,
    CONSTRAINT uq_lifecycle_outbox_event UNIQUE (run_id, event_id)
);

CREATE TRIGGER tr_history_events_lifecycle_outbox AFTER INSERT ON history_events
FOR EACH ROW WHEN NEW.event_type IN ('WorkflowExecutionStarted', 'WorkflowExecutionCompleted',
    'WorkflowExecutionFailed', 'WorkflowExecutionTimedOut', 'WorkflowExecutionTerminated',
    'WorkflowExecutionCanceled', 'WorkflowExecutionContinuedAsNew')
    AND EXISTS (SELECT 1 FROM server_metadata WHERE key = 'lifecycle_outbox')
BEGIN
    INSERT INTO lifecycle_outbox (namespace, workflow_id, workflow_type, run_id, event_id, event_type, event_us)
    SELECT NEW.namespace, e.workflow_id, e.workflow_type, NEW.run_id, NEW.event_id, NEW.event_type, NEW.event_us
    FROM executions e WHERE e.run_id = NEW.run_id;
END;
