-- Placement read models (issue 5): planner host reservations
-- (CloudStack's op_host_planner_reservation) from placement.events.v1, and
-- the offering's planner mode from catalog.v1. A released reservation
-- keeps its row with planner '' so an older HostReserved cannot revive it.

CREATE TABLE host_reservations (
    host_id        text PRIMARY KEY,
    zone_id        text NOT NULL DEFAULT '',
    planner        text NOT NULL DEFAULT '',
    resource_usage text NOT NULL DEFAULT '',
    account        text NOT NULL DEFAULT '',
    reason         text NOT NULL DEFAULT '',
    at             timestamptz NOT NULL,
    version        bigint NOT NULL
);
CREATE INDEX host_reservations_zone_id ON host_reservations (zone_id);

ALTER TABLE offerings ADD COLUMN planner_mode text NOT NULL DEFAULT '';
