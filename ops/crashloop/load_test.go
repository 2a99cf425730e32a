package crashloop

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// loadConfig shapes the steady load.
type loadConfig struct {
	simTarget int // sim VMs kept alive
	qemuMax   int // QEMU VMs alive at once, at most
	simOff    string
	qemuOff   string // "" when there are no QEMU hosts
}

// accepted is a job the gateway answered 202 for.
type accepted struct {
	id, vmID, kind string
	at             time.Duration // on the stack's clock
	wall           time.Time
}

type loadVM struct {
	id      string
	qemu    bool
	deleted bool
}

// load drives the REST API: deploys, VM actions and deletes from one
// worker, host operations from another. Every 202 is recorded.
type load struct {
	cfg   loadConfig
	user  *api // a user key: VMs
	admin *api // the admin key: hosts
	st    *stack

	mu       sync.Mutex
	vms      []*loadVM
	jobs     []accepted
	counts   map[string]int    // outcome of each request, e.g. "deploy 202", "stop 409"
	hostsOut map[string]string // host → the action that will bring it back
}

func (l *load) count(what string, err error) {
	key := what + " 202"
	if err != nil {
		if s := status(err); s != 0 {
			key = fmt.Sprintf("%s %d", what, s)
		} else {
			key = what + " unanswered"
		}
	}
	l.mu.Lock()
	l.counts[key]++
	l.mu.Unlock()
}

func (l *load) accept(j jobJSON, kind string) {
	l.mu.Lock()
	l.jobs = append(l.jobs, accepted{id: j.ID, vmID: j.VmID, kind: kind, at: l.st.clock(), wall: time.Now()})
	l.mu.Unlock()
}

func (l *load) accepted() []accepted {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.jobs)
}

// run drives the load until ctx ends; rng seeds the two workers.
func (l *load) run(ctx context.Context, seed int64) {
	var wg sync.WaitGroup
	wg.Go(func() { l.vmWorker(ctx, rand.New(rand.NewPCG(uint64(seed), 0x766d))) })
	wg.Go(func() { l.hostWorker(ctx, rand.New(rand.NewPCG(uint64(seed), 0x686f7374))) })
	wg.Wait()
}

func sleepRand(ctx context.Context, rng *rand.Rand, lo, hi time.Duration) bool {
	d := lo + time.Duration(rng.Int64N(int64(hi-lo)))
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func (l *load) alive() (sim, qemu []*loadVM) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.vms {
		switch {
		case v.deleted:
		case v.qemu:
			qemu = append(qemu, v)
		default:
			sim = append(sim, v)
		}
	}
	return sim, qemu
}

// The actions the load asks for when the VM allows them; terminate comes
// as DELETE.
var vmActions = []string{"stop", "start", "reboot", "pause", "unpause", "migrate"}

func (l *load) vmWorker(ctx context.Context, rng *rand.Rand) {
	n := 0
	for sleepRand(ctx, rng, 100*time.Millisecond, 350*time.Millisecond) {
		n++
		sim, qemu := l.alive()
		r := rng.Float64()
		switch {
		case l.cfg.qemuOff != "" && len(qemu) < l.cfg.qemuMax && r < 0.15:
			l.deploy(ctx, fmt.Sprintf("q-%d", n), l.cfg.qemuOff, true)
		case len(sim) < l.cfg.simTarget && r < 0.5:
			l.deploy(ctx, fmt.Sprintf("s-%d", n), l.cfg.simOff, false)
		default:
			all := append(sim, qemu...)
			if len(all) == 0 {
				continue
			}
			l.act(ctx, rng, all[rng.IntN(len(all))])
		}
	}
}

func (l *load) deploy(ctx context.Context, name, offering string, qemu bool) {
	var j jobJSON
	err := l.user.call(ctx, http.MethodPost, "/v1/vms", map[string]any{"name": name, "offering": offering}, &j, 4)
	l.count("deploy", err)
	if err != nil {
		return
	}
	l.accept(j, "deploy")
	l.mu.Lock()
	l.vms = append(l.vms, &loadVM{id: j.VmID, qemu: qemu})
	l.mu.Unlock()
}

// act reads the VM and asks for one of the actions it allows now, or
// deletes it (also while a job runs: Terminate cancels it).
func (l *load) act(ctx context.Context, rng *rand.Rand, v *loadVM) {
	var vm vmJSON
	if err := l.user.call(ctx, http.MethodGet, "/v1/vms/"+v.id, nil, &vm, 2); err != nil {
		l.count("get", err)
		return
	}
	var choices []string
	for _, a := range vm.AllowedActions {
		if slices.Contains(vmActions, a) {
			choices = append(choices, a)
		}
	}
	del := rng.Float64()
	switch {
	case vm.TaskState != "" && del < 0.05, vm.TaskState == "" && del < 0.1, vm.TaskState == "" && len(choices) == 0 && del < 0.7:
		var j jobJSON
		err := l.user.call(ctx, http.MethodDelete, "/v1/vms/"+v.id, nil, &j, 4)
		l.count("delete", err)
		if err == nil {
			l.accept(j, "delete")
			l.mu.Lock()
			v.deleted = true
			l.mu.Unlock()
		}
	case vm.TaskState == "" && len(choices) > 0:
		a := choices[rng.IntN(len(choices))]
		var j jobJSON
		err := l.user.call(ctx, http.MethodPost, "/v1/vms/"+v.id+"/actions", map[string]any{"action": a}, &j, 4)
		l.count(a, err)
		if err == nil {
			l.accept(j, a)
		}
	}
}

// hostWorker takes one host out of service at a time (disable, or
// maintenance, which migrates its VMs away) and brings it back the next
// time.
func (l *load) hostWorker(ctx context.Context, rng *rand.Rand) {
	var hosts []hostJSON
	for sleepRand(ctx, rng, 3*time.Second, 7*time.Second) {
		if len(hosts) == 0 {
			var ls list[hostJSON]
			if err := l.admin.call(ctx, http.MethodGet, "/v1/hosts?limit=100", nil, &ls, 2); err != nil {
				continue
			}
			hosts = ls.Items
			sort.Slice(hosts, func(i, j int) bool { return hosts[i].ID < hosts[j].ID })
		}
		l.mu.Lock()
		out := maps.Clone(l.hostsOut)
		l.mu.Unlock()
		if len(out) > 0 {
			for id, back := range out {
				l.hostAction(ctx, id, back)
			}
			continue
		}
		h := hosts[rng.IntN(len(hosts))]
		if h.Hypervisor == "qemu" && rng.Float64() < 0.5 {
			continue // QEMU hosts less often: their VMs are few and real
		}
		action, back := "disable", "enable"
		if rng.Float64() < 0.5 {
			action, back = "prepare_for_maintenance", "cancel_maintenance"
		}
		if l.hostAction(ctx, h.ID, action) {
			l.mu.Lock()
			l.hostsOut[h.ID] = back
			l.mu.Unlock()
		}
	}
}

// hostAction sends a host action; bringing a host back clears it from
// hostsOut.
func (l *load) hostAction(ctx context.Context, id, action string) bool {
	err := l.admin.call(ctx, http.MethodPost, "/v1/hosts/"+id+"/actions", map[string]any{"action": action}, nil, 4)
	l.count("host "+action, err)
	if err != nil {
		return false
	}
	l.st.logf("host %s: %s", id, action)
	if action == "enable" || action == "cancel_maintenance" {
		l.mu.Lock()
		delete(l.hostsOut, id)
		l.mu.Unlock()
	}
	return true
}

// restoreHosts brings back every host still out of service, trying for up
// to d.
func (l *load) restoreHosts(ctx context.Context, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		l.mu.Lock()
		out := maps.Clone(l.hostsOut)
		l.mu.Unlock()
		if len(out) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var left []string
			for id, a := range out {
				left = append(left, id+" ("+a+")")
			}
			return left
		}
		for id, back := range out {
			l.hostAction(ctx, id, back)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (l *load) countsText() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return countsText(l.counts)
}

func countsText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
