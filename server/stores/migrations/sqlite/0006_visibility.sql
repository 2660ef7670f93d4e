-- Visibility (docs/visibility.md): custom search attributes of each namespace with
-- their types, each run's values, its memo, and the indexes list queries use.

CREATE TABLE search_attribute_types (
    namespace   TEXT   NOT NULL CONSTRAINT fk_search_attribute_types_namespace REFERENCES namespaces (name),
    name        TEXT   NOT NULL,
    value_type  TEXT   NOT NULL CONSTRAINT ck_search_attribute_types_value_type CHECK (value_type IN
                    ('KEYWORD', 'INT', 'DOUBLE', 'BOOL', 'DATETIME')),
    create_us   BIGINT NOT NULL,
    CONSTRAINT pk_search_attribute_types PRIMARY KEY (namespace, name)
);

-- One row per (run, attribute); exactly one value column is set, chosen by the
-- attribute's type (Bool is stored in int_value as 0/1).
CREATE TABLE search_attributes (
    namespace     TEXT   NOT NULL,
    run_id        TEXT   NOT NULL CONSTRAINT fk_search_attributes_run REFERENCES executions (run_id),
    name          TEXT   NOT NULL,
    keyword_value TEXT,
    int_value     BIGINT,
    double_value  REAL,
    datetime_us   BIGINT,
    CONSTRAINT pk_search_attributes PRIMARY KEY (run_id, name),
    CONSTRAINT ck_search_attributes_one_value CHECK (
        (CASE WHEN keyword_value IS NULL THEN 0 ELSE 1 END) + (CASE WHEN int_value IS NULL THEN 0 ELSE 1 END)
        + (CASE WHEN double_value IS NULL THEN 0 ELSE 1 END) + (CASE WHEN datetime_us IS NULL THEN 0 ELSE 1 END) = 1)
);
-- A filter on a custom attribute: the runs whose value matches, found in index order.
CREATE INDEX ix_search_attributes_keyword ON search_attributes (namespace, name, keyword_value, run_id) WHERE keyword_value IS NOT NULL;
CREATE INDEX ix_search_attributes_int ON search_attributes (namespace, name, int_value, run_id) WHERE int_value IS NOT NULL;
CREATE INDEX ix_search_attributes_double ON search_attributes (namespace, name, double_value, run_id) WHERE double_value IS NOT NULL;
CREATE INDEX ix_search_attributes_datetime ON search_attributes (namespace, name, datetime_us, run_id) WHERE datetime_us IS NOT NULL;

-- The memo given at start; written once, never on the hot path.
CREATE TABLE memos (
    namespace  TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    memo       BLOB NOT NULL,
    CONSTRAINT pk_memos PRIMARY KEY (run_id),
    CONSTRAINT fk_memos_run FOREIGN KEY (run_id) REFERENCES executions (run_id)
);

-- List queries on the built-in attributes, newest first (keyset by start_us, run_id).
CREATE INDEX ix_executions_type_start ON executions (namespace, workflow_type, start_us, run_id);
CREATE INDEX ix_executions_status_start ON executions (namespace, status, start_us, run_id);
CREATE INDEX ix_executions_close ON executions (namespace, close_us, run_id) WHERE close_us IS NOT NULL;
