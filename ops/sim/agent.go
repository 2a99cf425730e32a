package sim

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/vmplane/vmplane/producers/agent"
	drv "github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// simAgent speaks the agent protocol of producers/agent (docs/agents.md)
// for some hosts of the shared simulated hypervisor, one step at a time:
// it announces its hosts, reports every VM and pings each round, reports a
// change at once, executes each command id once and answers a repeat with
// the first answer, and answers investigations for hosts of its clusters.
// What it produces goes into an outbox, one queue per partition, which the
// world delivers late, twice, or in another order across partitions; a
// crash loses the outbox, its position and, unless it keeps an answers
// file, its answers.
type simAgent struct {
	id    string
	hosts []agent.HostInfo
	drv   *drv.Driver
	// durable: the agent keeps its answers in a file, which outlives a
	// crash; else a restart relies on the driver's idempotence alone.
	durable bool

	running   bool
	seq       map[string]int64
	connected map[string]bool
	rejected  map[string]bool
	answers   map[string]schemas.Record // by command id: what was answered
	disk      map[string]schemas.Record // the answers file
	pos       map[int32]int64           // next offset of agent.commands.v1
	outbox    map[tp][]schemas.Record
	waiting   []tp  // the partitions with queued records, sorted
	nextRound int64 // Unix ms of the next report round
}

func (a *simAgent) group() string { return "vmplane-agent-" + a.id }

func (a *simAgent) serves(host string) (agent.HostInfo, bool) {
	for _, h := range a.hosts {
		if h.ID == host {
			return h, true
		}
	}
	return agent.HostInfo{}, false
}

// start runs the agent process: the report sequence starts above any it
// used before (it is based on the clock), the position is the group's
// committed offset, and the first round announces every host at once.
func (a *simAgent) start(w *world) {
	a.running = true
	a.seq, a.connected, a.rejected = map[string]int64{}, map[string]bool{}, map[string]bool{}
	for _, h := range a.hosts {
		a.seq[h.ID] = w.ms() * 1000
	}
	a.answers = map[string]schemas.Record{}
	if a.durable {
		for k, v := range a.disk {
			a.answers[k] = v
		}
	}
	a.pos = map[int32]int64{}
	for part := range w.log.partitions(schemas.TopicAgentCommands) {
		a.pos[part] = w.log.committed(a.group(), tp{schemas.TopicAgentCommands, part})
	}
	a.outbox, a.waiting = map[tp][]schemas.Record{}, nil
	a.nextRound = w.ms()
}

// crash ends the process without a word: nothing unsent goes out.
func (a *simAgent) crash() {
	a.running = false
	a.outbox, a.waiting = nil, nil
}

// stop ends the process cleanly: AgentDisconnected for every announced
// host, and the positions committed.
func (a *simAgent) stop(w *world) {
	for _, h := range a.hosts {
		if a.connected[h.ID] && !a.rejected[h.ID] {
			a.send(w, schemas.Record{Topic: schemas.TopicHostEvents, Key: h.ID, Value: &schemas.AgentDisconnected{
				HostID: h.ID, Reason: "agent stopping", At: w.ms()}})
		}
	}
	a.commit(w)
	a.flushAll(w)
	a.running = false
}

func (a *simAgent) commit(w *world) {
	offs := map[tp]int64{}
	for part, o := range a.pos {
		offs[tp{schemas.TopicAgentCommands, part}] = o
	}
	w.log.commitOffsets(a.group(), offs)
}

func (a *simAgent) nextSeq(host string) int64 {
	a.seq[host]++
	return a.seq[host]
}

// send queues a record for its partition.
func (a *simAgent) send(w *world, r schemas.Record) {
	at := tp{r.Topic, w.log.partitionOf(r.Topic, r.Key)}
	if len(a.outbox[at]) == 0 {
		i, _ := slices.BinarySearchFunc(a.waiting, at, cmpTP)
		a.waiting = slices.Insert(a.waiting, i, at)
	}
	a.outbox[at] = append(a.outbox[at], r)
}

// pendingOut lists the partitions with queued records, sorted.
func (a *simAgent) pendingOut() []tp { return a.waiting }

func cmpTP(x, y tp) int {
	if c := strings.Compare(x.topic, y.topic); c != 0 {
		return c
	}
	return int(x.part - y.part)
}

// deliver sends the head of one partition's queue; dup sends it twice, as
// a producer retrying after a lost acknowledgement may.
func (a *simAgent) deliver(w *world, at tp, dup bool) {
	q := a.outbox[at]
	r := q[0]
	a.outbox[at] = q[1:]
	if len(q) == 1 {
		if i, ok := slices.BinarySearchFunc(a.waiting, at, cmpTP); ok {
			a.waiting = slices.Delete(a.waiting, i, i+1)
		}
	}
	w.produce(r)
	if dup {
		w.trace("%s duplicates %s", a.id, schemas.TypeName(r.Value))
		w.produce(r)
	}
}

func (a *simAgent) flushAll(w *world) {
	for _, at := range slices.Clone(a.pendingOut()) {
		for len(a.outbox[at]) > 0 {
			a.deliver(w, at, false)
		}
	}
}

// round reports every host it can reach: AgentConnected for a host not
// announced yet, a PowerReport per VM and an AgentPing, under one new
// report sequence. A host it cannot reach is skipped and announced again
// once back. The next round is due a ping interval later.
func (a *simAgent) round(w *world) {
	at := w.ms()
	a.nextRound = at + pingInterval.Milliseconds()
	for _, h := range a.hosts {
		if a.rejected[h.ID] {
			continue
		}
		seq := a.nextSeq(h.ID)
		states, err := a.drv.PowerStates(h.ID)
		if err != nil {
			a.connected[h.ID] = false
			continue
		}
		ids := agent.SortedIDs(states)
		if !a.connected[h.ID] {
			a.send(w, schemas.Record{Topic: schemas.TopicHostEvents, Key: h.ID, Value: agent.Connected(a.id, h, ids, at)})
		}
		for _, vm := range ids {
			a.send(w, schemas.Record{Topic: schemas.TopicVmPower, Key: vm, Value: &schemas.PowerReport{
				VmID: vm, HostID: h.ID, PowerState: states[vm], ReportSeq: seq, ReportedAt: at}})
		}
		a.send(w, schemas.Record{Topic: schemas.TopicHostEvents, Key: h.ID, Value: &schemas.AgentPing{
			HostID: h.ID, ReportSeq: seq, VmIDs: ids, At: at}})
		a.connected[h.ID] = true
	}
}

// changes reports the VMs whose power the driver saw change on its own.
func (a *simAgent) changes(w *world, cs []agent.Change) {
	for _, c := range cs {
		if _, ok := a.serves(c.HostID); !ok || a.rejected[c.HostID] || !a.connected[c.HostID] {
			continue
		}
		a.reportVM(w, c.HostID, c.VmID)
	}
}

func (a *simAgent) reportVM(w *world, host, vm string) {
	seq := a.nextSeq(host)
	states, err := a.drv.PowerStates(host)
	if err != nil {
		return
	}
	state, ok := states[vm]
	if !ok {
		state = schemas.PowerOff
	}
	at := w.ms()
	a.send(w, schemas.Record{Topic: schemas.TopicVmPower, Key: vm, Value: &schemas.PowerReport{
		VmID: vm, HostID: host, PowerState: state, ReportSeq: seq, ReportedAt: at}})
	a.send(w, schemas.Record{Topic: schemas.TopicHostEvents, Key: host, Value: &schemas.AgentPing{
		HostID: host, ReportSeq: seq, VmIDs: agent.SortedIDs(states), At: at}})
}

// poll reads up to max commands and carries out those for its hosts.
func (a *simAgent) poll(w *world, max int) bool {
	did := false
	for part := range w.log.partitions(schemas.TopicAgentCommands) {
		at := tp{schemas.TopicAgentCommands, part}
		for max > 0 && a.pos[part] < w.log.end(at) {
			e, _ := w.log.read(at, a.pos[part])
			a.pos[part]++
			max--
			did = true
			a.handle(w, e)
		}
	}
	return did
}

func (a *simAgent) handle(w *world, e entry) {
	v, err := schemas.Unmarshal(e.value)
	if err != nil {
		return // skipped and counted, never dead-lettered by an agent
	}
	c, ok := v.(schemas.AgentCommandRecord)
	if !ok {
		return
	}
	cmd := c.Command()
	switch v := v.(type) {
	case *schemas.CheckHost:
		a.investigate(w, v, cmd, v.TargetHostID, v.ClusterID)
		return
	case *schemas.FenceHost:
		a.investigate(w, v, cmd, v.TargetHostID, v.ClusterID)
		return
	case *schemas.AgentRejected:
		if _, ok := a.serves(cmd.HostID); ok {
			a.rejected[cmd.HostID] = true
		}
		return
	}
	if _, ok := a.serves(cmd.HostID); !ok {
		return
	}
	if prev, ok := a.answers[cmd.CommandID]; ok {
		a.send(w, prev) // a repeat: the first answer again, nothing runs
		return
	}
	a.execute(w, v, cmd)
}

// execute carries out one command (agent.Execute, as producers/agent
// does) and answers it.
func (a *simAgent) execute(w *world, v any, cmd *schemas.AgentCommand) {
	w.touched = true
	peers := make([]string, len(a.hosts))
	for i, h := range a.hosts {
		peers[i] = h.ID
	}
	where, report, err := agent.Execute(context.Background(), a.drv, v, w.ms(), peers)
	if errors.Is(err, agent.ErrExpired) {
		w.trace("%s refuses expired %s %s", a.id, schemas.TypeName(v), cmd.CommandID)
	}
	if agent.Unanswered(err) {
		return // unreachable, or issued before its host came back: no answer (agent.Unanswered)
	}
	seq, state := a.answer(w, v, cmd, err, where)
	if err != nil {
		return
	}
	a.afterChange(w, v, cmd, report, where, seq, state)
}

// answer reads the VM's power state where the command left it, keeps the
// answer and sends it; the reports after it share its sequence and state.
func (a *simAgent) answer(w *world, v any, cmd *schemas.AgentCommand, err error, where string) (seq int64, state string) {
	seq = a.nextSeq(where)
	state, serr := a.drv.PowerState(where, cmd.VmID)
	switch {
	case errors.Is(serr, agent.ErrUnknownVM):
		state = schemas.PowerOff
	case serr != nil:
		state = schemas.PowerUnknown
	}
	at := w.ms()
	ans := &schemas.AgentAnswer{CommandID: cmd.CommandID, VmID: cmd.VmID, HostID: cmd.HostID, Epoch: cmd.Epoch,
		CommandType: schemas.TypeName(v), OK: err == nil, PowerState: state, AnsweredAt: at, PowerHost: where, ReportSeq: seq}
	if err != nil {
		ans.Error = schemas.CleanText(err.Error())
	}
	ar := schemas.Record{Topic: schemas.TopicVmAnswers, Key: cmd.VmID, Value: ans, Headers: map[string]string{"command_id": cmd.CommandID}}
	a.answers[cmd.CommandID] = ar
	if a.durable {
		a.disk[cmd.CommandID] = ar
	}
	a.send(w, ar)
	return seq, state
}

// afterChange reports what a command that succeeded changed: the VM's
// power, and the VM list of the hosts it came to or left.
func (a *simAgent) afterChange(w *world, v any, cmd *schemas.AgentCommand, report bool, where string, seq int64, state string) {
	at := w.ms()
	if report && !a.rejected[where] && a.connected[where] {
		a.send(w, schemas.Record{Topic: schemas.TopicVmPower, Key: cmd.VmID, Value: &schemas.PowerReport{
			VmID: cmd.VmID, HostID: where, PowerState: state, ReportSeq: seq, ReportedAt: at}})
	}
	switch v.(type) {
	case *schemas.StartVm, *schemas.DestroyVm, *schemas.MigrateVm:
		a.vmList(w, where, seq, at)
		if where != cmd.HostID {
			a.vmList(w, cmd.HostID, a.nextSeq(cmd.HostID), at)
		}
	}
}

func (a *simAgent) vmList(w *world, host string, seq, at int64) {
	if a.rejected[host] || !a.connected[host] {
		return
	}
	states, err := a.drv.PowerStates(host)
	if err != nil {
		return
	}
	a.send(w, schemas.Record{Topic: schemas.TopicHostEvents, Key: host, Value: &schemas.AgentPing{
		HostID: host, ReportSeq: seq, VmIDs: agent.SortedIDs(states), At: at}})
}

// investigate answers a CheckHost or FenceHost from another live host of
// the target's cluster that this agent serves; none, and it is not ours.
func (a *simAgent) investigate(w *world, v any, cmd *schemas.AgentCommand, target, cluster string) {
	if cmd.Expired(w.ms()) {
		return // the investigation has moved on, as producers/agent skips it
	}
	from := ""
	for _, h := range a.hosts {
		if h.ID == target || h.Cluster != cluster || !a.connected[h.ID] || a.rejected[h.ID] {
			continue
		}
		if _, err := a.drv.PowerStates(h.ID); err == nil {
			from = h.ID
			break
		}
	}
	if from == "" {
		return
	}
	if _, fence := v.(*schemas.FenceHost); fence {
		w.touched = true
	}
	result, detail := agent.Investigate(context.Background(), a.drv, v, from, target)
	if result == "Down" {
		w.trace("%s fences %s", a.id, target)
		w.fenced = w.now
	}
	a.send(w, schemas.Record{Topic: schemas.TopicHostEvents, Key: target, Headers: map[string]string{"command_id": cmd.CommandID},
		Value: &schemas.CheckHostAnswer{CommandID: cmd.CommandID, HostID: from, TargetHostID: target, Result: result,
			Detail: schemas.CleanText(detail), At: w.ms()}})
}
