-- Console sessions live here so that logout ends one on every replica, and
-- each records the hash of the token it was made with: rotating or removing
-- that token in the tokens file ends the session. id_hash is the SHA-256 of
-- the cookie's random ID, so reading this table yields no usable cookie.
CREATE TABLE console_sessions (
    id_hash      text PRIMARY KEY,
    principal    text NOT NULL,
    token_sha256 text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires_at_idx ON console_sessions (expires_at);

-- /readyz writes this one row (throttled) to learn whether writes succeed;
-- a database that answers reads but refuses writes (disk full) is not ready.
CREATE TABLE tideline_write_probe (
    id        integer PRIMARY KEY,
    probed_at timestamptz NOT NULL
);

-- The principal (token) holding a run's lease, next to the worker_id it
-- named: another token cannot act on the run by naming the same worker.
ALTER TABLE workflow_runs ADD COLUMN worker_principal text;
