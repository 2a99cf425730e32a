-- Alerts name their zone (a host's alerts are a zone's operators' to see),
-- and an acknowledgement is kept beside its alert, not in it: the alert is
-- what happened and never changes; who took it in hand arrives on
-- alert.acks.v1, in any order with the alert during a rebuild.
ALTER TABLE alerts ADD COLUMN zone_id text NOT NULL DEFAULT '';
CREATE INDEX alerts_host_id ON alerts (host_id) WHERE host_id <> '';

CREATE TABLE alert_acks (
    alert_id text PRIMARY KEY,
    by       text NOT NULL DEFAULT '',
    at       timestamptz NOT NULL,
    version  bigint NOT NULL
);
