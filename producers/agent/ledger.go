package agent

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vmplane/vmplane/schemas"
)

// A host keeps, for each VM, a ledger of the commands carried out for it,
// so that none is carried out twice or behind a newer job's back. An agent
// restarted without its answers reads old commands again, and expiry bounds
// only how late: a Deploy's StartVm read again after the VM had been
// stopped started it a second time (found by the simulation, seeds 40139
// and 6956). A host that was down voids every command issued before it came
// back (ErrBeforeDown). Every VM epoch is one job of the VM processor, so:
//   - a command of an epoch older than the ledger's is stale: a newer job
//     has acted on the VM there (ErrSuperseded);
//   - a command of the ledger's epoch whose id is in it succeeded there
//     before: it is answered from the VM's power as it is, not carried out
//     again.
// The ledger lives with the driver (Driver.Ledger): the sim driver keeps it
// per host, the QEMU driver in a file beside the guests. The decisions are
// here, once.

// Ledger is what a host keeps of the commands carried out for one VM.
type Ledger struct {
	// Epoch is the newest VM epoch of a command admitted on the host.
	Epoch int64 `json:"epoch"`
	// Done lists the ids of that epoch's commands that succeeded there,
	// the newest last, at most ledgerDone of them.
	Done []string `json:"done,omitempty"`
}

// ledgerDone bounds Ledger.Done: a job sends a handful of commands to one
// host.
const ledgerDone = 16

// ErrSuperseded answers a command older than one a newer job of the VM had
// carried out on the host.
var ErrSuperseded = errors.New("superseded: a newer job's command for this VM was carried out on this host")

// ErrBeforeDown answers a command issued before (or as) its host last came back
// from being down (Driver.UpSince): the job that sent it may have failed
// on the host's fencing and the VM been restarted elsewhere since; carrying
// it out would make a second copy (found by the simulation, seed 10876: a
// RescueVm read by a fenced host once it was back booted the VM while its
// HA restart ran it on another host). It is not answered (Unanswered): a
// job still waiting resends it, and an earlier delivery may have carried it
// out, so a refusal would tell the job a failure that may not be one (seed
// 66964: the Deploy failed on the refusal and released the claim of a VM
// an earlier delivery had started).
var ErrBeforeDown = errors.New("issued before the host came back from being down")

// Unanswered says whether a command that came to err gets no answer: its
// host could not be reached, or it was issued before the host came back.
// The job that sent it resends it or times out, as with a lost command.
func Unanswered(err error) bool {
	return errors.Is(err, ErrHostUnreachable) || errors.Is(err, ErrBeforeDown)
}

// ledgerHosts are the hosts whose ledger a command consults: none for a
// CheckVm, which changes nothing; the source, and the destination when the
// agent serves it, for a migration; else the command's host.
func ledgerHosts(v any, cmd *schemas.AgentCommand, peers []string) []string {
	switch c := v.(type) {
	case *schemas.CheckVm:
		return nil
	case *schemas.MigrateVm:
		if slices.Contains(peers, c.DestHostID) {
			return []string{cmd.HostID, c.DestHostID}
		}
	}
	return []string{cmd.HostID}
}

// whereAfter is the host the VM is on once the command succeeded: the
// destination of a migration, else the command's host.
func whereAfter(v any, cmd *schemas.AgentCommand) string {
	if m, ok := v.(*schemas.MigrateVm); ok {
		return m.DestHostID
	}
	return cmd.HostID
}

// admit decides a command against its hosts: ErrBeforeDown when it was
// issued before one came back from being down; ErrSuperseded when one has
// admitted a newer epoch; repeat when the first carried it out before. A
// newer epoch is recorded, with no command done.
func admit(d Driver, hosts []string, cmd *schemas.AgentCommand) (repeat bool, err error) {
	for i, h := range hosts {
		up, err := d.UpSince(h)
		if err != nil {
			return false, err
		}
		if up != 0 && cmd.IssuedAt <= up {
			return false, fmt.Errorf("%w (host %s)", ErrBeforeDown, h)
		}
		l, err := d.Ledger(h, cmd.VmID)
		if err != nil {
			return false, err
		}
		switch {
		case cmd.Epoch < l.Epoch:
			return false, fmt.Errorf("%w (epoch %d; host %s ran epoch %d)", ErrSuperseded, cmd.Epoch, h, l.Epoch)
		case cmd.Epoch == l.Epoch:
			repeat = repeat || (i == 0 && slices.Contains(l.Done, cmd.CommandID))
		default:
			if err := d.SetLedger(h, cmd.VmID, Ledger{Epoch: cmd.Epoch}); err != nil {
				return false, err
			}
		}
	}
	return repeat, nil
}

// carriedOut records a command that succeeded in the ledgers of its
// hosts. A ledger that cannot be written only leaves the command to be
// carried out again if read again, as before ledgers: the drivers' commands
// are idempotent on their own.
func carriedOut(d Driver, hosts []string, cmd *schemas.AgentCommand) {
	for _, h := range hosts {
		l, err := d.Ledger(h, cmd.VmID)
		if err != nil || l.Epoch != cmd.Epoch || slices.Contains(l.Done, cmd.CommandID) {
			continue
		}
		l.Done = append(l.Done, cmd.CommandID)
		if len(l.Done) > ledgerDone {
			l.Done = l.Done[len(l.Done)-ledgerDone:]
		}
		_ = d.SetLedger(h, cmd.VmID, l)
	}
}
