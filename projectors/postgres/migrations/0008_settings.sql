-- Operator settings (settings.v1): the value of each setting set at a scope,
-- global ('' as scope_id), a zone or a cluster. A setting set back to its
-- default has no row. version is the record's offset, so an older record
-- never overwrites a newer one.
CREATE TABLE settings (
    name       text NOT NULL,
    scope      text NOT NULL,
    scope_id   text NOT NULL DEFAULT '',
    value      text NOT NULL,
    set_by     text NOT NULL DEFAULT '',
    set_at     timestamptz NOT NULL,
    version    bigint NOT NULL,
    PRIMARY KEY (name, scope, scope_id)
);
