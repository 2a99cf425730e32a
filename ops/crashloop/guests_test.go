package crashloop

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/processors/placement"
	"github.com/vmplane/vmplane/schemas"
)

// states is the processors' latest state per key, from their changelogs:
// what the control plane believes, with no projection in between.
type states struct {
	vms   map[string]*schemas.VmRecord   // expunged VMs (tombstones) absent
	zones map[string]*schemas.ZoneRecord // placement ledger per zone
	read  readStats
}

func readStates(ctx context.Context, st *stack) (*states, error) {
	codec := schemas.NewCodec(nil)
	s := &states{vms: map[string]*schemas.VmRecord{}, zones: map[string]*schemas.ZoneRecord{}}
	// A zone is on placement.state.v1 in parts (engine.Parted), each its
	// own key: the latest of each, assembled as a restore does.
	parts := map[string]map[string]any{}
	var bad []string
	stats, err := readLog(ctx, st.kcfg, st.admin, []string{schemas.TopicVmState, schemas.TopicPlacementState}, func(kr *kgo.Record) {
		key := string(kr.Key)
		if kr.Topic == schemas.TopicPlacementState {
			zone, name := schemas.SplitPartKey(key)
			if parts[zone] == nil {
				parts[zone] = map[string]any{}
			}
			if kr.Value == nil {
				delete(parts[zone], name)
				return
			}
			rec, err := kafka.FromKafka(ctx, codec, kr)
			if err != nil {
				bad = append(bad, err.Error())
				return
			}
			parts[zone][name] = rec.Value
			return
		}
		if kr.Value == nil {
			delete(s.vms, key)
			return
		}
		rec, err := kafka.FromKafka(ctx, codec, kr)
		if err != nil {
			bad = append(bad, err.Error())
			return
		}
		if v, ok := rec.Value.(*schemas.VmRecord); ok {
			s.vms[key] = v
		}
	})
	s.read = stats
	m := placement.New(placement.DefaultConfig())
	for zone, byName := range parts {
		if whole, ok := byName[""].(*schemas.ZoneRecord); ok {
			s.zones[zone] = whole // written before the zone was in parts
			continue
		}
		if _, ok := byName[""]; !ok {
			continue // parts left over from a zone that went
		}
		var ps []schemas.Part
		for name, v := range byName {
			ps = append(ps, schemas.Part{Name: name, Value: v})
		}
		z, aerr := m.Assemble(zone, ps)
		if aerr != nil {
			bad = append(bad, aerr.Error())
			continue
		}
		s.zones[zone] = z
	}
	if err == nil && len(bad) > 0 {
		err = fmt.Errorf("%d changelog records do not decode or assemble, first: %s", len(bad), bad[0])
	}
	return s, err
}

// guest is one running qemu-system process.
type guest struct {
	pid  int
	vm   string // -name
	host string // from its control socket, <dir>/<vm>/<host>.qmp
	cmd  string
}

// qemuGuests lists the qemu-system processes whose files lie in dir.
func qemuGuests(dir string) []guest {
	out, _ := exec.Command("pgrep", "-af", "qemu-system").Output() // exit 1: none
	var gs []guest
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.Contains(filepath.Base(f[1]), "qemu-system") || !strings.Contains(line, dir+"/") {
			continue
		}
		g := guest{cmd: oneLine(line, 400)}
		g.pid, _ = strconv.Atoi(f[0])
		for i := 1; i+1 < len(f); i++ {
			switch f[i] {
			case "-name":
				g.vm = f[i+1]
			case "-qmp":
				if g.host == "" {
					sock := strings.TrimPrefix(strings.SplitN(f[i+1], ",", 2)[0], "unix:")
					g.host = strings.TrimSuffix(filepath.Base(sock), ".qmp")
				}
			}
		}
		gs = append(gs, g)
	}
	return gs
}

// A guest runs in these VM states; in the others there is none, or (Error,
// Suspended, Building) either may be true.
var (
	guestStates   = map[string]bool{"Active": true, "Paused": true, "Rescued": true, "Resized": true}
	noGuestStates = map[string]bool{"Stopped": true, "Deleted": true, "Expunged": true}
)

// checkGuests is invariant 2: no VM has more than one running qemu guest,
// no guest runs that no live VM claims (or whose VM reads Stopped), and
// every QEMU VM that reads running has its guest.
func checkGuests(dir string, s *states, qemuHosts map[string]bool) result {
	r := result{name: "2 no VM runs twice, no guest runs unclaimed (pgrep qemu-system)"}
	gs := qemuGuests(dir)
	byVM := map[string][]guest{}
	for _, g := range gs {
		byVM[g.vm] = append(byVM[g.vm], g)
	}
	vmIDs := make([]string, 0, len(byVM))
	for id := range byVM {
		vmIDs = append(vmIDs, id)
	}
	sort.Strings(vmIDs)
	var twice, unclaimed, offButRuns, tolerated int
	for _, id := range vmIDs {
		g := byVM[id]
		if len(g) > 1 {
			twice++
			r.failf("VM %s has %d qemu processes: %s", id, len(g), guestsText(g))
		}
		v, ok := s.vms[id]
		switch {
		case !ok:
			unclaimed++
			r.failf("guest %s runs for VM %s, which the VM processor does not know (or expunged)", guestsText(g), id)
		case v.VmState == "Deleted" || v.VmState == "Expunged":
			unclaimed++
			r.failf("guest %s runs for VM %s, which is %s", guestsText(g), id, v.VmState)
		case noGuestStates[v.VmState]:
			offButRuns++
			r.failf("guest %s runs for VM %s, which reads %s/%s on host %q", guestsText(g), id, v.VmState, v.PowerState, v.HostID)
		case !guestStates[v.VmState]:
			tolerated++
		default:
			if g[0].host != v.HostID {
				r.failf("guest %s of VM %s runs on %s, the VM's host is %q", guestsText(g), id, g[0].host, v.HostID)
			}
		}
	}
	var qemuVMs, running, missing int
	for id, v := range s.vms {
		if !qemuHosts[v.HostID] || v.VmState == "Deleted" {
			continue
		}
		qemuVMs++
		if !guestStates[v.VmState] {
			continue
		}
		running++
		if len(byVM[id]) == 0 && v.Job == nil {
			missing++
			r.failf("VM %s reads %s/%s on host %s but no qemu process runs for it", id, v.VmState, v.PowerState, v.HostID)
		}
	}
	r.summary = fmt.Sprintf("qemu processes %d for %d VMs; live QEMU VMs %d (%d in a running state); more than one process %d, unclaimed %d, "+
		"running while the VM reads off %d, in Error/Suspended/Building %d, running VM without a process %d",
		len(gs), len(byVM), qemuVMs, running, twice, unclaimed, offButRuns, tolerated, missing)
	return r
}

func guestsText(gs []guest) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = fmt.Sprintf("pid %d on %s, %s", g.pid, g.host, procInfo(g.pid))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// procInfo says who a process's parent is and how long it has run: a
// guest whose agent was killed has been handed to init (or a subreaper).
func procInfo(pid int) string {
	out, err := exec.Command("ps", "-o", "ppid=,etimes=,args=", "-p", strconv.Itoa(pid)).Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 3 {
		return "gone"
	}
	parent := "?"
	if pout, err := exec.Command("ps", "-o", "args=", "-p", f[0]).Output(); err == nil {
		parent = oneLine(string(pout), 60)
	}
	return fmt.Sprintf("up %ss, parent pid %s (%s)", f[1], f[0], parent)
}
