-- The gateway's Idempotency-Key store: one row per (account, key), shared by
-- every gateway instance and kept across restarts. status 0 is a request in
-- flight (claimed by token); a finished request keeps its response to replay.
CREATE TABLE idempotency_keys (
    account     text NOT NULL,
    key         text NOT NULL,
    fingerprint bytea NOT NULL,
    token       text NOT NULL,
    status      integer NOT NULL DEFAULT 0,
    location    text NOT NULL DEFAULT '',
    body        bytea,
    claimed_at  timestamptz NOT NULL,
    PRIMARY KEY (account, key)
);
CREATE INDEX idempotency_keys_claimed_at ON idempotency_keys (claimed_at);
