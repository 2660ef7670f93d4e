-- Access (docs/security.md): API keys and the append-only, hash-chained audit log.
-- Only a salted hash of a key's secret is stored: secret_hash = HMAC-SHA256(salt, secret).
CREATE TABLE api_keys (
    key_id       TEXT    NOT NULL CONSTRAINT pk_api_keys PRIMARY KEY,
    name         TEXT    NOT NULL,
    namespace    TEXT    NOT NULL,
    role         TEXT    NOT NULL CONSTRAINT ck_api_keys_role CHECK (role IN ('reader', 'writer', 'worker', 'operator', 'admin')),
    salt         BLOB    NOT NULL CONSTRAINT ck_api_keys_salt_length CHECK (length(salt) = 16),
    secret_hash  BLOB    NOT NULL CONSTRAINT ck_api_keys_secret_hash_length CHECK (length(secret_hash) = 32),
    created_us   INTEGER NOT NULL,
    created_by   TEXT    NOT NULL,
    expires_us   INTEGER,
    revoked_us   INTEGER
);
-- The bootstrap check: is there a live admin key for '*'?
CREATE INDEX ix_api_keys_role_namespace ON api_keys (role, namespace) WHERE revoked_us IS NULL;

-- seq is gapless (1, 2, 3, ...): the head row hands out the next number under its
-- row lock, so a deleted row shows as a gap and an edited one as a hash mismatch.
CREATE TABLE audit_log (
    seq        INTEGER NOT NULL CONSTRAINT pk_audit_log PRIMARY KEY CONSTRAINT ck_audit_log_seq_positive CHECK (seq > 0),
    time_us    INTEGER NOT NULL,
    principal  TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    namespace  TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    reason     TEXT    NOT NULL,
    details    TEXT    NOT NULL,
    row_hash   BLOB    NOT NULL CONSTRAINT ck_audit_log_row_hash_length CHECK (length(row_hash) = 32)
);

CREATE TABLE audit_head (
    id         INTEGER NOT NULL CONSTRAINT pk_audit_head PRIMARY KEY CONSTRAINT ck_audit_head_single_row CHECK (id = 1),
    last_seq   INTEGER NOT NULL CONSTRAINT ck_audit_head_last_seq_not_negative CHECK (last_seq >= 0),
    last_hash  BLOB    NOT NULL
);
INSERT INTO audit_head (id, last_seq, last_hash) VALUES (1, 0, X'');
