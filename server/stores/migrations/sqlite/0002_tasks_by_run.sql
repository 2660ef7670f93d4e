-- Closing a run deletes its outstanding tasks and describe() lists them: without this
-- index both scan every outstanding task of every run.
CREATE INDEX ix_tasks_run ON tasks (run_id);
