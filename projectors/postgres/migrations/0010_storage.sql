-- Storage and networks (issue 27). templates from catalog.v1 (key
-- template:<id>); storage_pools and networks from placement.events.v1, as
-- placement holds them; volumes, nics and volume_snapshots from
-- vm.events.v1 (rows of one VM share its partition, so version orders them
-- as it does the vms row).
--
-- A refused UpdateStoragePool or UpdateNetwork leaves the pool or network
-- as it was and only sets last_error, so that the admin who asked can read
-- why; a refused create leaves a row with applied = false, which the lists
-- leave out. An applied change clears last_error.

-- An offering's storage tags: the pool of its VMs' volumes must carry
-- them all.
ALTER TABLE offerings ADD COLUMN storage_tags text[] NOT NULL DEFAULT '{}';

CREATE TABLE templates (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    format     text NOT NULL DEFAULT '',
    size_mb    bigint NOT NULL DEFAULT 0,
    os_type    text NOT NULL DEFAULT '',
    deleted    boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    version    bigint NOT NULL
);
CREATE INDEX templates_name ON templates (name);

CREATE TABLE storage_pools (
    id          text PRIMARY KEY,
    zone_id     text NOT NULL DEFAULT '',
    name        text NOT NULL DEFAULT '',
    scope       text NOT NULL DEFAULT '',
    cluster_id  text NOT NULL DEFAULT '',
    host_id     text NOT NULL DEFAULT '',
    path        text NOT NULL DEFAULT '',
    capacity_mb bigint NOT NULL DEFAULT 0,
    used_mb     bigint NOT NULL DEFAULT 0,
    volumes     integer NOT NULL DEFAULT 0,
    tags        text[] NOT NULL DEFAULT '{}',
    state       text NOT NULL DEFAULT '',
    applied     boolean NOT NULL DEFAULT true,
    last_error  text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL,
    version     bigint NOT NULL
);
CREATE INDEX storage_pools_zone_id ON storage_pools (zone_id);

CREATE TABLE networks (
    id         text PRIMARY KEY,
    zone_id    text NOT NULL DEFAULT '',
    name       text NOT NULL DEFAULT '',
    cidr       text NOT NULL DEFAULT '',
    gateway    text NOT NULL DEFAULT '',
    is_default boolean NOT NULL DEFAULT false,
    size       integer NOT NULL DEFAULT 0,
    allocated  integer NOT NULL DEFAULT 0,
    applied    boolean NOT NULL DEFAULT true,
    last_error text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL,
    version    bigint NOT NULL
);
CREATE INDEX networks_zone_id ON networks (zone_id);

CREATE TABLE volumes (
    id          text PRIMARY KEY,
    vm_id       text NOT NULL,
    account     text NOT NULL DEFAULT '',
    zone_id     text NOT NULL DEFAULT '',
    name        text NOT NULL DEFAULT '',
    kind        text NOT NULL DEFAULT '',
    device_id   integer NOT NULL DEFAULT 0,
    pool_id     text NOT NULL DEFAULT '',
    size_mb     bigint NOT NULL DEFAULT 0,
    template_id text NOT NULL DEFAULT '',
    state       text NOT NULL DEFAULT '',
    deleted     boolean NOT NULL DEFAULT false,
    job_id      text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    version     bigint NOT NULL
);
CREATE INDEX volumes_vm_id ON volumes (vm_id);
CREATE INDEX volumes_account ON volumes (account, id);

CREATE TABLE nics (
    id         text PRIMARY KEY,
    vm_id      text NOT NULL,
    account    text NOT NULL DEFAULT '',
    zone_id    text NOT NULL DEFAULT '',
    network_id text NOT NULL DEFAULT '',
    device_id  integer NOT NULL DEFAULT 0,
    mac        text NOT NULL DEFAULT '',
    ip         text NOT NULL DEFAULT '',
    gateway    text NOT NULL DEFAULT '',
    cidr       text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL,
    version    bigint NOT NULL
);
CREATE INDEX nics_vm_id ON nics (vm_id);

CREATE TABLE volume_snapshots (
    volume_id text NOT NULL,
    name      text NOT NULL,
    vm_id     text NOT NULL,
    account   text NOT NULL DEFAULT '',
    job_id    text NOT NULL DEFAULT '',
    taken_at  timestamptz NOT NULL,
    version   bigint NOT NULL,
    PRIMARY KEY (volume_id, name)
);
CREATE INDEX volume_snapshots_vm_id ON volume_snapshots (vm_id);
