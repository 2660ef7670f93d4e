-- Namespace quotas and retention bookkeeping (docs/security.md, "Limits and quotas").
-- A quota of 0 means "no limit". The start-rate token bucket lives in the row, so every
-- replica admitting a start reads and refills the same bucket in its start transaction.
ALTER TABLE namespaces ADD COLUMN max_running_executions INTEGER NOT NULL DEFAULT 0
    CONSTRAINT ck_namespaces_max_running_executions_not_negative CHECK (max_running_executions >= 0);
-- Starts per second admitted on average; bursts of up to max(1, start_rate).
ALTER TABLE namespaces ADD COLUMN start_rate REAL NOT NULL DEFAULT 0
    CONSTRAINT ck_namespaces_start_rate_not_negative CHECK (start_rate >= 0);
ALTER TABLE namespaces ADD COLUMN start_tokens REAL NOT NULL DEFAULT 0
    CONSTRAINT ck_namespaces_start_tokens_not_negative CHECK (start_tokens >= 0);
-- When start_tokens was last refilled.
ALTER TABLE namespaces ADD COLUMN start_tokens_us INTEGER NOT NULL DEFAULT 0;
ALTER TABLE namespaces ADD COLUMN max_concurrent_activities INTEGER NOT NULL DEFAULT 0
    CONSTRAINT ck_namespaces_max_concurrent_activities_not_negative CHECK (max_concurrent_activities >= 0);
-- The retention sweeper's last pass over the namespace, and how many runs it purged in all.
ALTER TABLE namespaces ADD COLUMN last_purge_us INTEGER;
ALTER TABLE namespaces ADD COLUMN purged_executions INTEGER NOT NULL DEFAULT 0
    CONSTRAINT ck_namespaces_purged_executions_not_negative CHECK (purged_executions >= 0);

-- The max-concurrent-activities quota counts a namespace's leased activity tasks.
CREATE INDEX ix_tasks_leased_namespace ON tasks (namespace, kind) WHERE state = 'LEASED';
-- Retention purges a run's request ids by run.
CREATE INDEX ix_request_ids_run ON request_ids (run_id);
-- ... and its queries.
CREATE INDEX ix_workflow_queries_run ON workflow_queries (run_id);
