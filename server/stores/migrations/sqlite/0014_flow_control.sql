-- Flow control (docs/flow-control.md): priority and fairness, fleet-wide concurrency
-- limits per key. A run's priority is kept with it so its workflow tasks, its
-- activities and its children inherit it.
ALTER TABLE executions ADD COLUMN priority_key INTEGER NOT NULL DEFAULT 3
    CONSTRAINT ck_executions_priority_key_range CHECK (priority_key BETWEEN 1 AND 5);
ALTER TABLE executions ADD COLUMN fairness_key TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN fairness_weight REAL NOT NULL DEFAULT 1
    CONSTRAINT ck_executions_fairness_weight_positive CHECK (fairness_weight > 0);

ALTER TABLE tasks ADD COLUMN priority_key INTEGER NOT NULL DEFAULT 3
    CONSTRAINT ck_tasks_priority_key_range CHECK (priority_key BETWEEN 1 AND 5);
ALTER TABLE tasks ADD COLUMN fairness_key TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN fairness_weight REAL NOT NULL DEFAULT 1
    CONSTRAINT ck_tasks_fairness_weight_positive CHECK (fairness_weight > 0);
-- Stride scheduling: the virtual time at which the task's fairness key has had its
-- share (0 for a task without a fairness key). Dispatch order within a priority.
ALTER TABLE tasks ADD COLUMN fair_pass REAL NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN concurrency_key TEXT;
-- Why a pending task is held out of dispatch: 'concurrency' (its key's limit is reached).
ALTER TABLE tasks ADD COLUMN held TEXT CONSTRAINT ck_tasks_held CHECK (held IS NULL OR held IN ('concurrency'));
ALTER TABLE tasks ADD COLUMN held_since_us INTEGER;

-- Polls look at ready tasks only: held ones leave the partial indexes.
DROP INDEX ix_tasks_pending_queue;
CREATE INDEX ix_tasks_pending_queue ON tasks (namespace, kind, task_queue, visible_us, task_id)
    WHERE state = 'PENDING' AND held IS NULL;
-- The dispatch order: lowest priority key, then fair pass, then the oldest visible.
CREATE INDEX ix_tasks_dispatch_order ON tasks (namespace, kind, task_queue, priority_key, fair_pass, visible_us, task_id)
    WHERE state = 'PENDING' AND held IS NULL;
-- A freed slot releases the best held task of its key.
CREATE INDEX ix_tasks_held_key ON tasks (namespace, concurrency_key, priority_key, fair_pass, task_id)
    WHERE held IS NOT NULL;
-- The lease transaction counts the key's leased tasks.
CREATE INDEX ix_tasks_leased_key ON tasks (namespace, concurrency_key)
    WHERE state = 'LEASED' AND concurrency_key IS NOT NULL;

-- Each fairness key's pass per queue; the key '' holds the queue's virtual time
-- (the pass of the last task dispatched), where a key that was idle starts again.
CREATE TABLE fairness_passes (
    namespace     TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    task_queue    TEXT    NOT NULL,
    fairness_key  TEXT    NOT NULL,
    pass          REAL    NOT NULL,
    CONSTRAINT pk_fairness_passes PRIMARY KEY (namespace, kind, task_queue, fairness_key)
);

-- Fleet-wide limits on leased tasks per concurrency key (flowforge limit set).
CREATE TABLE concurrency_limits (
    namespace        TEXT    NOT NULL,
    concurrency_key  TEXT    NOT NULL,
    max_running      INTEGER NOT NULL CONSTRAINT ck_concurrency_limits_max_running_positive CHECK (max_running > 0),
    update_us        INTEGER NOT NULL,
    CONSTRAINT pk_concurrency_limits PRIMARY KEY (namespace, concurrency_key)
);
