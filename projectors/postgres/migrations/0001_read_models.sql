-- Read models of vmplane. Every projected row carries `version`: the Kafka
-- offset of the record that last wrote it. Offsets of one key are monotonic
-- (a key lives in one partition), so `version < excluded.version` guards
-- every upsert against an older record.

CREATE TABLE vms (
    id                       text PRIMARY KEY,
    name                     text NOT NULL DEFAULT '',
    account                  text NOT NULL DEFAULT '',
    zone_id                  text NOT NULL DEFAULT '',
    offering_id              text NOT NULL DEFAULT '',
    offering                 text NOT NULL DEFAULT '',
    cpu                      integer NOT NULL DEFAULT 0,
    memory_mb                bigint NOT NULL DEFAULT 0,
    ha                       boolean NOT NULL DEFAULT false,
    vm_state                 text NOT NULL DEFAULT '',
    task_state               text NOT NULL DEFAULT '',
    power_state              text NOT NULL DEFAULT '',
    power_host               text NOT NULL DEFAULT '',
    power_state_update_time  timestamptz,
    power_state_update_count integer NOT NULL DEFAULT 0,
    legacy_state             text NOT NULL DEFAULT '',
    host_id                  text NOT NULL DEFAULT '',
    epoch                    bigint NOT NULL DEFAULT 0,
    job_id                   text NOT NULL DEFAULT '',
    pending_jobs             integer NOT NULL DEFAULT 0,
    allowed_actions          text[] NOT NULL DEFAULT '{}',
    reason                   text NOT NULL DEFAULT '',
    created_at               timestamptz NOT NULL,
    updated_at               timestamptz NOT NULL,
    version                  bigint NOT NULL
);
CREATE INDEX vms_account_id ON vms (account, id);
CREATE INDEX vms_host_id ON vms (host_id) WHERE host_id <> '';

-- jobs.version is the vm.events offset of the last event of the job; a row
-- made from the command alone has version -1 so any event overwrites it.
CREATE TABLE jobs (
    id              text PRIMARY KEY,
    vm_id           text NOT NULL DEFAULT '',
    account         text NOT NULL DEFAULT '',
    type            text NOT NULL DEFAULT '',
    origin          text NOT NULL DEFAULT '',
    state           text NOT NULL,
    reason          text NOT NULL DEFAULT '',
    detail          text NOT NULL DEFAULT '',
    task_state      text NOT NULL DEFAULT '',
    allowed_actions text[] NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    version         bigint NOT NULL
);
CREATE INDEX jobs_vm_id ON jobs (vm_id, id);
CREATE INDEX jobs_account_id ON jobs (account, id);
CREATE INDEX jobs_state_id ON jobs (state, id);

CREATE TABLE job_steps (
    job_id     text NOT NULL,
    seq        integer NOT NULL,
    vm_id      text NOT NULL DEFAULT '',
    task_state text NOT NULL DEFAULT '',
    step       text NOT NULL DEFAULT '',
    text       text NOT NULL DEFAULT '',
    obj        text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL,
    version    bigint NOT NULL,
    PRIMARY KEY (job_id, seq)
);

-- hosts has two writers on two topics: host.status.v1 (version) and
-- placement.events.v1 (usage_version, the offset of the capacity change).
CREATE TABLE hosts (
    id             text PRIMARY KEY,
    name           text NOT NULL DEFAULT '',
    zone_id        text NOT NULL DEFAULT '',
    pod_id         text NOT NULL DEFAULT '',
    cluster_id     text NOT NULL DEFAULT '',
    hypervisor     text NOT NULL DEFAULT '',
    status         text NOT NULL DEFAULT '',
    resource_state text NOT NULL DEFAULT '',
    reservable     boolean NOT NULL DEFAULT false,
    cpu            integer NOT NULL DEFAULT 0,
    memory_mb      bigint NOT NULL DEFAULT 0,
    cpu_overcommit double precision NOT NULL DEFAULT 1,
    mem_overcommit double precision NOT NULL DEFAULT 1,
    tags           text[] NOT NULL DEFAULT '{}',
    used_cpu       integer NOT NULL DEFAULT 0,
    used_memory_mb bigint NOT NULL DEFAULT 0,
    last_ping_at   timestamptz,
    reason         text NOT NULL DEFAULT '',
    updated_at     timestamptz NOT NULL,
    version        bigint NOT NULL DEFAULT -1,
    usage_version  bigint NOT NULL DEFAULT -1
);
CREATE INDEX hosts_zone_id ON hosts (zone_id, id);

CREATE TABLE allocations (
    vm_id      text NOT NULL,
    host_id    text NOT NULL,
    zone_id    text NOT NULL DEFAULT '',
    account    text NOT NULL DEFAULT '',
    cpu        integer NOT NULL DEFAULT 0,
    memory_mb  bigint NOT NULL DEFAULT 0,
    request_id text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL,
    version    bigint NOT NULL,
    PRIMARY KEY (vm_id, host_id)
);
CREATE INDEX allocations_host_id ON allocations (host_id);
CREATE INDEX allocations_zone_id ON allocations (zone_id);

CREATE TABLE offerings (
    id                 text PRIMARY KEY,
    name               text NOT NULL,
    cpu                integer NOT NULL DEFAULT 0,
    memory_mb          bigint NOT NULL DEFAULT 0,
    ha                 boolean NOT NULL DEFAULT false,
    deployment_planner text NOT NULL DEFAULT '',
    host_tags          text[] NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL,
    version            bigint NOT NULL
);
CREATE INDEX offerings_name ON offerings (name);

CREATE TABLE accounts (
    id         text PRIMARY KEY,
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    version    bigint NOT NULL
);

CREATE TABLE api_keys (
    key_id     text PRIMARY KEY,
    account_id text NOT NULL,
    role       text NOT NULL,
    hash       text NOT NULL,
    expires_at timestamptz,
    revoked    boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    version    bigint NOT NULL
);
CREATE INDEX api_keys_account_id ON api_keys (account_id);

CREATE TABLE alerts (
    id      text PRIMARY KEY,
    kind    text NOT NULL DEFAULT '',
    vm_id   text NOT NULL DEFAULT '',
    host_id text NOT NULL DEFAULT '',
    account text NOT NULL DEFAULT '',
    job_id  text NOT NULL DEFAULT '',
    message text NOT NULL DEFAULT '',
    at      timestamptz NOT NULL,
    version bigint NOT NULL
);
CREATE INDEX alerts_at ON alerts (at DESC);
CREATE INDEX alerts_vm_id ON alerts (vm_id) WHERE vm_id <> '';

-- The projector's consumer positions, written in the same transaction as
-- the rows they produced: the next offset to apply per partition.
CREATE TABLE consumer_offsets (
    "group"     text NOT NULL,
    topic       text NOT NULL,
    "partition" integer NOT NULL,
    next_offset bigint NOT NULL,
    PRIMARY KEY ("group", topic, "partition")
);
