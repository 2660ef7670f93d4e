-- Fewer indexes on tasks, the table every activity inserts, leases and deletes a row of
-- (issue 20): each index is a page written per change of a row on SQLite (run ids are
-- random, so entries of two runs rarely share a page) and CPU on PostgreSQL.

-- ix_tasks_dispatch_order has the same predicate and the same leading columns
-- (namespace, kind, task_queue): a poll's look and a queue's backlog read visible_us
-- from its entries, so the oldest-first index adds nothing but a write per change.
DROP INDEX ix_tasks_pending_queue;

-- One index per run instead of two: (run_id, activity_id) unique over all rows serves
-- the lookups by run_id alone (describe, closing a run, the foreign key from
-- executions) as a prefix. A workflow task's activity_id is NULL, and NULLs are
-- distinct in a unique index, so it still admits one row per activity id of a run and
-- any workflow task (ux_tasks_run_workflow_task keeps that to one per run).
DROP INDEX ix_tasks_run;
DROP INDEX ux_tasks_run_activity;
CREATE UNIQUE INDEX ux_tasks_run_activity ON tasks (run_id, activity_id);
