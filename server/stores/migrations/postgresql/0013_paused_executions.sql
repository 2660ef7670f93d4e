-- Pause (docs/operations.md): while a run is paused, the tasks of the run that wait in
-- their queue are held (visible_us far in the future) and new ones are created held;
-- unpause makes them visible again. pause_note is JSON: who paused it, why, since when.
ALTER TABLE executions ADD COLUMN paused INTEGER NOT NULL DEFAULT 0
    CONSTRAINT ck_executions_paused CHECK (paused IN (0, 1));
ALTER TABLE executions ADD COLUMN pause_note TEXT;
