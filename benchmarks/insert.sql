-- One single-row INSERT per transaction (pgbench wraps each script run in its own transaction).
INSERT INTO commit_rate (payload) VALUES (repeat('x', 100));
