-- Batch operations (docs/operations.md): a job applies one operation (cancel, terminate,
-- signal, reset, pause) to every execution a visibility query matched, newest first,
-- rate-limited. Each execution is handled in one transaction with the job's progress
-- (done, failed and the keyset cursor of the last one handled), so a server restarted
-- halfway goes on from exactly where it stopped.
CREATE TABLE batch_jobs (
    id              TEXT    NOT NULL CONSTRAINT pk_batch_jobs PRIMARY KEY,
    namespace       TEXT    NOT NULL,
    operation       TEXT    NOT NULL CONSTRAINT ck_batch_jobs_operation CHECK (operation IN
                        ('cancel', 'terminate', 'signal', 'reset', 'pause')),
    query           TEXT    NOT NULL,
    reason          TEXT    NOT NULL,
    identity        TEXT    NOT NULL,
    -- The operation's own arguments as JSON (signal name and input, reset type).
    arguments       TEXT    NOT NULL,
    rps             REAL    NOT NULL CONSTRAINT ck_batch_jobs_rps_positive CHECK (rps > 0),
    state           TEXT    NOT NULL CONSTRAINT ck_batch_jobs_state CHECK (state IN ('RUNNING', 'COMPLETED')),
    total           INTEGER  NOT NULL,
    done            INTEGER  NOT NULL DEFAULT 0,
    failed          INTEGER  NOT NULL DEFAULT 0,
    -- The last execution handled, in list order (start_us, run_id descending); NULL: none yet.
    cursor_start_us INTEGER,
    cursor_run_id   TEXT,
    create_us       INTEGER  NOT NULL,
    update_us       INTEGER  NOT NULL
);
-- batch list (newest first) and the runner's look for running jobs.
CREATE INDEX ix_batch_jobs_namespace_create ON batch_jobs (namespace, create_us);
CREATE INDEX ix_batch_jobs_running ON batch_jobs (state, create_us);
