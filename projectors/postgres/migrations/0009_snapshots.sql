-- VM snapshots (issue 26) from vm.events.v1: one row per snapshot a VM
-- keeps, written by SnapshotTaken and removed by SnapshotDeleted (a delete
-- job, or the VM's terminate) and by VmExpunged. Rows of one VM share its
-- partition, so version orders them as it does the vms row.

CREATE TABLE snapshots (
    vm_id    text NOT NULL,
    name     text NOT NULL,
    account  text NOT NULL DEFAULT '',
    job_id   text NOT NULL DEFAULT '',
    taken_at timestamptz NOT NULL,
    version  bigint NOT NULL,
    PRIMARY KEY (vm_id, name)
);

-- DELETE /v1/offerings/{id} counts the VMs of an offering (not expunged:
-- a Deleted VM may be recovered).
CREATE INDEX vms_offering_id ON vms (offering_id);
