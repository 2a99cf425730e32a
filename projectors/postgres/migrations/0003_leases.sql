-- Lease read models (issue 6) from lease.events.v1: one row per lease and
-- per reservation as the latest LeaseStatusChanged left them, and every
-- notification (lease status changes and host reservability changes) in
-- lease_events, keyed by the record's place in the log so a replay
-- inserts nothing twice.

CREATE TABLE leases (
    id         text PRIMARY KEY,
    zone_id    text NOT NULL DEFAULT '',
    project    text NOT NULL DEFAULT '',
    name       text NOT NULL DEFAULT '',
    status     text NOT NULL DEFAULT '',
    degraded   boolean NOT NULL DEFAULT false,
    start_at   timestamptz NOT NULL,
    end_at     timestamptz NOT NULL,
    reason     text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    version    bigint NOT NULL
);
CREATE INDEX leases_project ON leases (project, id);

CREATE TABLE lease_reservations (
    id                text PRIMARY KEY,
    lease_id          text NOT NULL,
    idx               int NOT NULL DEFAULT 0,
    status            text NOT NULL DEFAULT '',
    min_hosts         int NOT NULL DEFAULT 0,
    max_hosts         int NOT NULL DEFAULT 0,
    host_properties   jsonb NOT NULL DEFAULT '{}',
    hosts             text[] NOT NULL DEFAULT '{}',
    missing_resources boolean NOT NULL DEFAULT false,
    resources_changed boolean NOT NULL DEFAULT false,
    version           bigint NOT NULL
);
CREATE INDEX lease_reservations_lease_id ON lease_reservations (lease_id, idx);

CREATE TABLE lease_events (
    zone_id      text NOT NULL,
    version      bigint NOT NULL,
    lease_id     text NOT NULL DEFAULT '',
    project      text NOT NULL DEFAULT '',
    event        text NOT NULL DEFAULT '',
    status       text NOT NULL DEFAULT '',
    degraded     boolean NOT NULL DEFAULT false,
    host_id      text NOT NULL DEFAULT '',
    detail       text NOT NULL DEFAULT '',
    command_id   text NOT NULL DEFAULT '',
    reservations jsonb NOT NULL DEFAULT '[]',
    at           timestamptz NOT NULL,
    PRIMARY KEY (zone_id, version, lease_id)
);
CREATE INDEX lease_events_lease_id ON lease_events (lease_id, at, version);
