package roles

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/testkit"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/sim"
	"github.com/vmplane/vmplane/schemas"
)

// lifecycle is the whole write path on kfake: the three processors, a sim
// agent with four hosts and the Postgres projector on a fresh database.
type lifecycle struct {
	t    *testing.T
	kcfg kafka.Config
	cl   *kgo.Client
	drv  *sim.Driver
	db   *pgx.Conn
	seq  int
}

func newLifecycle(t *testing.T) *lifecycle { return newLifecycleUnder(t, "") }

// newLifecycleUnder is newLifecycle on a broker where only the topics of
// prefix exist, every role configured with it.
func newLifecycleUnder(t *testing.T, prefix string) *lifecycle {
	if testing.Short() {
		t.Skip("needs the embedded broker and PostgreSQL")
	}
	dsn := testkit.Postgres(t)
	ctx := t.Context()
	kcfg, _ := testkit.KafkaPrefixed(t, prefix)
	timelineOnFailure(t, kcfg, time.Now())
	cl := client(t, kcfg)
	log := slog.New(slog.DiscardHandler)
	o := Options{Kafka: kcfg, InstanceID: "a", Logger: log}
	// An hour between report rounds: the only power reports are those the
	// agent sends on a command and those the test sends.
	set := Settings{PingInterval: time.Hour}
	startProcessors(t, o, set, engine.SystemClock{}, ProcessorKinds...)
	proj, err := NewPostgresProjector(o, dsn)
	if err != nil {
		t.Fatal(err)
	}
	go proj.Run(ctx)
	d, err := sim.New(sim.Config{Layout: sim.Layout{Prefix: "h", Zone: "zone-1", Pods: 1, ClustersPerPod: 2, HostsPerCluster: 2, CPU: 16, MemoryMB: 65536},
		Latency: sim.Durations{Start: 300 * time.Millisecond, Migrate: 200 * time.Millisecond, Reboot: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	go agent.New(agent.Config{ID: "test", Kafka: kcfg, PingInterval: time.Hour, Logger: log}, d).Run(ctx)
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	waitPlaceable(t, kcfg, 4)
	return &lifecycle{t: t, kcfg: kcfg, cl: cl, drv: d, db: db}
}

func (l *lifecycle) send(vmID string, v any) {
	l.t.Helper()
	if err := l.kcfg.Produce(l.t.Context(), l.cl, schemas.NewCodec(nil), schemas.Record{Topic: schemas.TopicVmCommands, Key: vmID, Value: v}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lifecycle) cmd(id, vmID string) schemas.VmCommand {
	return schemas.VmCommand{CommandID: id, VmID: vmID, Account: "acme", Origin: schemas.OriginAPI, IssuedAt: time.Now().UnixMilli()}
}

// ended waits for the end event of a job and returns it.
func (l *lifecycle) ended(jobID string) any {
	l.t.Helper()
	var end any
	waitFor(l.t, l.kcfg, schemas.TopicVmEvents, func(r schemas.Record) bool {
		switch v := r.Value.(type) {
		case *schemas.JobSucceeded:
			end = v
			return v.JobID == jobID
		case *schemas.JobFailed:
			end = v
			return v.JobID == jobID
		case *schemas.JobCancelled:
			end = v
			return v.JobID == jobID
		case *schemas.JobRejected:
			end = v
			return v.JobID == jobID
		}
		return false
	})
	return end
}

func (l *lifecycle) succeeded(jobID string) {
	l.t.Helper()
	if e, ok := l.ended(jobID).(*schemas.JobSucceeded); !ok {
		l.t.Fatalf("job %s ended with %#v", jobID, e)
	}
}

func (l *lifecycle) deploy(vmID string) {
	l.t.Helper()
	l.send(vmID, &schemas.Deploy{VmCommand: l.cmd("deploy-"+vmID, vmID), Name: vmID, ZoneID: "zone-1",
		Offering: schemas.Offering{ID: "off-small", Name: "small", CPU: 1, MemoryMB: 1024}})
}

// hostOf is the host the sim runs vmID on, "" for none.
func (l *lifecycle) hostOf(vmID string) string {
	for _, h := range l.drv.Hosts() {
		if st, err := l.drv.PowerStates(h.ID); err == nil && st[vmID] != "" {
			return h.ID
		}
	}
	return ""
}

// TestLifecycleThroughTheStack runs Reboot, Migrate and a power report
// storm through the real runtime, kfake, the sim agent and the Postgres
// projector.
func TestLifecycleThroughTheStack(t *testing.T) {
	l := newLifecycle(t)
	l.deploy("vm-1")
	l.succeeded("deploy-vm-1")
	src := l.hostOf("vm-1")
	if src == "" {
		t.Fatal("vm-1 runs nowhere after deploy")
	}

	l.send("vm-1", &schemas.Reboot{VmCommand: l.cmd("reboot-1", "vm-1"), Hard: true})
	l.succeeded("reboot-1")

	l.send("vm-1", &schemas.Migrate{VmCommand: l.cmd("migrate-1", "vm-1")})
	l.succeeded("migrate-1")
	dst := l.hostOf("vm-1")
	if dst == "" || dst == src {
		t.Fatalf("after migrate vm-1 runs on %q (was %q)", dst, src)
	}
	// Placement was asked to avoid the source, and the source claim was
	// released only after the move.
	var avoided, released bool
	for _, r := range readAll(t, l.kcfg, schemas.TopicPlacementRequests) {
		switch v := r.Value.(type) {
		case *schemas.PlaceVm:
			avoided = avoided || (v.RequestID == "migrate-1-1" && slices.Contains(v.AvoidHosts, src))
		case *schemas.ReleaseVm:
			released = released || (v.RequestID == "migrate-1-release" && v.HostID == src)
		}
	}
	if !avoided || !released {
		t.Fatalf("migrate: PlaceVm avoiding %s %v, ReleaseVm of %s %v", src, avoided, src, released)
	}
	var host, state string
	waitRow(t, func() bool {
		err := l.db.QueryRow(t.Context(), `SELECT host_id, vm_state FROM vms WHERE id = 'vm-1'`).Scan(&host, &state)
		return err == nil && host == dst && state == "Active"
	})

	// 10,000 same-state reports: at most 3 events, and at most 3 writes to
	// the VM's read models, counted by a trigger on this fresh database.
	before := l.observed("vm-1")
	l.countWrites()
	const storm = 10000
	base := time.Now().UnixMilli() * 1000
	recs := make([]*kgo.Record, 0, storm)
	codec := schemas.NewCodec(nil)
	for i := range storm {
		kr, err := kafka.ToKafka(t.Context(), codec, schemas.Record{Topic: schemas.TopicVmPower, Key: "vm-1",
			Value: &schemas.PowerReport{VmID: "vm-1", HostID: dst, PowerState: schemas.PowerOn, ReportSeq: base + int64(i), ReportedAt: time.Now().UnixMilli()}})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, kr)
	}
	if err := l.cl.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A command after the storm: once it is done, the storm was stepped.
	l.send("vm-1", &schemas.Snapshot{VmCommand: l.cmd("snap-1", "vm-1"), SnapshotName: "after-storm"})
	l.succeeded("snap-1")
	stormEvents := l.observed("vm-1") - before
	if stormEvents > 3 {
		t.Fatalf("%d PowerStateObserved events for %d same-state reports, want at most 3", stormEvents, storm)
	}
	var jobState string
	waitRow(t, func() bool {
		err := l.db.QueryRow(t.Context(), `SELECT state FROM jobs WHERE id = 'snap-1'`).Scan(&jobState)
		return err == nil && jobState == "succeeded"
	})
	writes := l.writes()
	// The snapshot job writes its own rows: jobs (accepted, stepped,
	// succeeded), one job_step and the VM row on its way in and out.
	snapshotWrites := l.jobWrites("snap-1")
	if storm := writes - snapshotWrites; storm > 3 {
		t.Fatalf("%d Postgres writes for the storm (%d in all, %d by the snapshot job), want at most 3", storm, writes, snapshotWrites)
	}
	t.Logf("storm of %d same-state reports: %d events, %d Postgres writes (%d in all, %d by the snapshot job)",
		storm, stormEvents, writes-snapshotWrites, writes, snapshotWrites)

	// Paused behind vmplane's back through the sim's control interface:
	// the VM follows to Paused and a VmStateSync alert is projected. (On
	// another VM: the storm's made-up report sequences of vm-1 run ahead
	// of its agent's, which would make the agent's report stale.)
	l.deploy("vm-3")
	l.succeeded("deploy-vm-3")
	srv := httptest.NewServer(l.drv.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/hosts/"+l.hostOf("vm-3")+"/vms/vm-3/power?state=Paused", "", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("out-of-band pause: %v %v", resp, err)
	}
	resp.Body.Close()
	var kind string
	waitRow(t, func() bool {
		return l.db.QueryRow(t.Context(), `SELECT v.vm_state, a.kind FROM vms v JOIN alerts a ON a.vm_id = v.id
			WHERE v.id = 'vm-3' AND a.kind = 'VmStateSync'`).Scan(&state, &kind) == nil && state == "Paused"
	})
}

// observed counts the PowerStateObserved events of a VM so far.
func (l *lifecycle) observed(vmID string) int {
	n := 0
	for _, r := range readAll(l.t, l.kcfg, schemas.TopicVmEvents) {
		if v, ok := r.Value.(*schemas.PowerStateObserved); ok && v.VmID == vmID {
			n++
		}
	}
	return n
}

// countWrites installs a trigger that counts every row written to the
// VM-related read models.
func (l *lifecycle) countWrites() {
	l.t.Helper()
	for _, q := range []string{
		`CREATE TABLE write_log (tbl text NOT NULL, job text NOT NULL DEFAULT '')`,
		`CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN
		   INSERT INTO write_log (tbl, job) VALUES (TG_TABLE_NAME, COALESCE(CASE TG_TABLE_NAME
		     WHEN 'jobs' THEN to_jsonb(NEW)->>'id' ELSE to_jsonb(NEW)->>'job_id' END, ''));
		   RETURN NEW;
		 END $$`,
		`CREATE TRIGGER vms_writes AFTER INSERT OR UPDATE ON vms FOR EACH ROW EXECUTE FUNCTION log_write()`,
		`CREATE TRIGGER jobs_writes AFTER INSERT OR UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION log_write()`,
		`CREATE TRIGGER job_steps_writes AFTER INSERT OR UPDATE ON job_steps FOR EACH ROW EXECUTE FUNCTION log_write()`,
		`CREATE TRIGGER alerts_writes AFTER INSERT OR UPDATE ON alerts FOR EACH ROW EXECUTE FUNCTION log_write()`,
	} {
		if _, err := l.db.Exec(l.t.Context(), q); err != nil {
			l.t.Fatalf("count writes: %v", err)
		}
	}
}

func (l *lifecycle) writes() int {
	var n int
	if err := l.db.QueryRow(l.t.Context(), `SELECT count(*) FROM write_log`).Scan(&n); err != nil {
		l.t.Fatal(err)
	}
	return n
}

func (l *lifecycle) jobWrites(job string) int {
	var n int
	if err := l.db.QueryRow(l.t.Context(), `SELECT count(*) FROM write_log WHERE job = $1`, job).Scan(&n); err != nil {
		l.t.Fatal(err)
	}
	return n
}

func waitRow(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("the read model never showed the expected row")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTerminateDuringDeploy terminates a VM while its agent is starting it:
// the deploy is cancelled, the VM is destroyed, and it never starts again.
func TestTerminateDuringDeploy(t *testing.T) {
	l := newLifecycle(t)
	l.deploy("vm-2")
	waitFor(t, l.kcfg, schemas.TopicAgentCommands, func(r schemas.Record) bool {
		s, ok := r.Value.(*schemas.StartVm)
		return ok && s.VmID == "vm-2"
	})
	l.send("vm-2", &schemas.Terminate{VmCommand: l.cmd("terminate-2", "vm-2")})
	if e, ok := l.ended("deploy-vm-2").(*schemas.JobCancelled); !ok {
		t.Fatalf("deploy ended with %#v, want JobCancelled", e)
	}
	l.succeeded("terminate-2")
	time.Sleep(time.Second) // the start the agent was running lands now
	if h := l.hostOf("vm-2"); h != "" {
		t.Fatalf("terminated vm-2 is still defined on %s", h)
	}
	var state string
	waitRow(t, func() bool {
		return l.db.QueryRow(t.Context(), `SELECT vm_state FROM vms WHERE id = 'vm-2'`).Scan(&state) == nil && state == "Deleted"
	})
	for _, r := range readAll(t, l.kcfg, schemas.TopicVmEvents) {
		if v, ok := r.Value.(*schemas.VmStateChanged); ok && v.VmID == "vm-2" && v.VmState == "Active" {
			t.Fatalf("vm-2 became Active: %+v", v)
		}
		if v, ok := r.Value.(*schemas.JobStepped); ok && v.JobID == "deploy-vm-2" && v.TaskState == "Spawning" && v.Seq > 4 {
			t.Fatalf("cancelled deploy stepped on: %+v", v)
		}
	}
}
