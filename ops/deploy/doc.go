// Package deploy is the production kit of vmplane, which is files, not
// code: the systemd units (systemd/) and their environment files (env/,
// installed as /etc/vmplane/); docs/operations.md says how they are used.
//
// Its tests hold the kit to what the roles need: plain environment files,
// and every listener of a one-machine install on a port of its own.
package deploy
