// Package deploy is the production kit of vmplane, which is files, not
// code: the systemd units (systemd/), their environment files (env/,
// installed as /etc/vmplane/), the user they run as (sysusers.d/) and the
// directories of a QEMU hypervisor (tmpfiles.d/); docs/operations.md,
// "Installing", says how they are installed.
//
// Its tests hold the kit to what the roles need: plain environment files,
// every listener of a one-machine install on a port of its own, every path
// a role writes writable under the units' sandbox, the ACL examples of the
// docs equal to internal/kafka's table, and TestKit, which installs the
// kit into a throw-away root, verifies it with systemd's own tools, runs
// every unit's command from its environment files and deploys a VM
// through the gateway.
package deploy
