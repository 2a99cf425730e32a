package storm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/vmplane/vmplane/benchmarks/harness"
	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/internal/memory"
	"github.com/vmplane/vmplane/processors/engine"
	"github.com/vmplane/vmplane/processors/vm"
	"github.com/vmplane/vmplane/schemas"
)

// Child roles: the bench binary re-executes itself with -child <role> so
// that a processor runs in a process of its own, whose CPU time /proc tells.
const (
	ChildVM   = "vm"
	ChildNull = "null"
)

// Bench-only topics, partitioned like the vm_id topics.
const (
	topicNullIn    = "bench.null.in.v1"
	topicNullState = "bench.null.state.v1"
	topicRaw       = "bench.raw.v1"
	nullName       = "bench-null"
)

var benchTopics = []schemas.TopicSpec{
	{Name: topicNullIn, KeyClass: schemas.KeyVM, Doc: "null-Step input: copies of vm.power.v1 records"},
	{Name: topicNullState, KeyClass: schemas.KeyVM, Compacted: true, Doc: "null-Step changelog"},
	{Name: topicRaw, KeyClass: schemas.KeyVM, Doc: "raw produce+consume: copies of vm.power.v1 records"},
}

// nullMachine decides nothing: every record deletes its key's (absent)
// state, so the runtime still writes one changelog record per key and
// transaction, as for the VM machine, but encodes nothing.
type nullMachine struct{}

func (nullMachine) Step(*schemas.VmRecord, schemas.Record, time.Time) (*schemas.VmRecord, []schemas.Record) {
	return nullState, nil
}

// nullState is the one tiny state every key of the null machine holds, so
// the runtime writes a changelog record per key and transaction, as for the
// VM machine.
var nullState = &schemas.VmRecord{}

func (nullMachine) Tick(*schemas.VmRecord, string, time.Time) (*schemas.VmRecord, []schemas.Record) {
	return nil, nil
}
func (nullMachine) Wake(*schemas.VmRecord) time.Time { return time.Time{} }

type childProcessor interface {
	Run(ctx context.Context) error
	Ready() bool
	Assigned() int
	Stats() *engine.Stats
}

// RunChild runs a child role until ctx ends. It prints one line
// "ready restored=<keys> restore_ms=<ms> heap_bytes=<n>" once every
// partition is assigned and restored; heap_bytes is HeapAlloc after a
// collection minus HeapAlloc after a collection before the processor ran.
func RunChild(ctx context.Context, role string, brokers []string) error {
	kcfg := kafka.Config{Brokers: brokers}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gc, err := childGC()
	if err != nil {
		return err
	}
	gc.Apply()
	var p childProcessor
	switch role {
	case ChildVM:
		// The wiring of ops/roles (KindVM), repeated so that the benchmark
		// builds while the roles' other dependencies are being edited.
		vp, err := engine.New(engine.Config{Name: "processor-vm", Kafka: kcfg, InstanceID: childInstance(), Logger: log,
			Inputs:    []string{schemas.TopicVmCommands, schemas.TopicVmPower, schemas.TopicVmAnswers, schemas.TopicVmSignals},
			Changelog: schemas.TopicVmState}, engine.Machine[*schemas.VmRecord](vm.New(vm.DefaultConfig())))
		if err != nil {
			return err
		}
		p = vp
	case ChildNull:
		np, err := engine.New(engine.Config{Name: nullName, Inputs: []string{topicNullIn}, Changelog: topicNullState,
			Kafka: kcfg, InstanceID: "bench", Logger: log, SkipDecode: true}, engine.Machine[*schemas.VmRecord](nullMachine{}))
		if err != nil {
			return err
		}
		p = np
	default:
		return fmt.Errorf("unknown child role %q", role)
	}
	want := int(schemas.Partitions[schemas.KeyVM])
	// The heap before restore: what the state size is measured from.
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	go func() {
		var assignedAt time.Time
		for ctx.Err() == nil {
			n := p.Assigned()
			if n > 0 && assignedAt.IsZero() {
				assignedAt = time.Now()
			}
			if n == want && p.Ready() {
				restoreMs := time.Since(assignedAt).Milliseconds()
				var ms goruntime.MemStats
				goruntime.GC()
				goruntime.ReadMemStats(&ms)
				if path := os.Getenv("VMPLANE_BENCH_READYPROFILE"); path != "" && role == ChildVM {
					// The heap right after restore, before the ready line
					// lets the storm start: what the state size is made of.
					writeHeapProfile(path, log)
				}
				fmt.Printf("ready restored=%d restore_ms=%d heap_bytes=%d\n", p.Stats().Restored.Load(), restoreMs, int64(ms.HeapAlloc)-int64(base))
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	if role == ChildVM {
		stop, err := harness.CPUProfile(os.Getenv("VMPLANE_BENCH_CPUPROFILE"), log)
		if err != nil {
			return err
		}
		defer stop()
	}
	if path := os.Getenv("VMPLANE_BENCH_MEMPROFILE"); path != "" && role == ChildVM {
		// The heap at the end of the child: the state of every VM plus
		// whatever the last batches left.
		defer writeHeapProfile(path, log)
	}
	return p.Run(ctx)
}

// child is a running child process, with what its ready line said.
type child struct {
	*harness.Child
	restored  int64
	restoreMs int64
	heapBytes int64
}

// childInstance is the instance id of a child VM processor: "bench", or
// VMPLANE_BENCH_INSTANCE for a second process of the same group.
func childInstance() string {
	if v := os.Getenv("VMPLANE_BENCH_INSTANCE"); v != "" {
		return v
	}
	return "bench"
}

// launchChild starts a child role, its instance id instance (empty: the
// default), without waiting for it.
func launchChild(role, instance string, brokers []string) (*child, error) {
	var env []string
	if instance != "" {
		env = append(env, "VMPLANE_BENCH_INSTANCE="+instance)
	}
	c, err := harness.StartChild([]string{"-child", role, "-brokers", strings.Join(brokers, ",")}, env...)
	if err != nil {
		return nil, err
	}
	return &child{Child: c}, nil
}

// startChild starts a child role and waits for its ready line.
func startChild(ctx context.Context, role string, brokers []string) (*child, error) {
	c, err := launchChild(role, "", brokers)
	if err != nil {
		return nil, err
	}
	line, err := c.WaitReady(ctx, 10*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("child %s: %w", role, err)
	}
	for _, f := range strings.Fields(line)[1:] {
		k, v, _ := strings.Cut(f, "=")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "restored":
			c.restored = n
		case "restore_ms":
			c.restoreMs = n
		case "heap_bytes":
			c.heapBytes = n
		}
	}
	return c, nil
}

// cpu returns the child's user+system CPU time so far, from /proc.
func (c *child) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// USER_HZ is 100 on every Linux this runs on.
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// childGC is the collector setting of a child: `vmplane processor`'s
// default (memory.RecommendedGCPercent, no memory limit), or
// VMPLANE_GC_PERCENT and VMPLANE_MEMORY_LIMIT as that command reads them,
// to measure others.
func childGC() (memory.GC, error) {
	gc := memory.GC{Percent: memory.RecommendedGCPercent}
	if v := os.Getenv("VMPLANE_GC_PERCENT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return gc, fmt.Errorf("VMPLANE_GC_PERCENT %q: %w", v, err)
		}
		gc.Percent = n
	}
	limit, err := memory.ParseBytes(os.Getenv("VMPLANE_MEMORY_LIMIT"))
	if err != nil {
		return gc, fmt.Errorf("VMPLANE_MEMORY_LIMIT: %w", err)
	}
	gc.MemoryLimit = limit
	return gc, nil
}

// writeHeapProfile writes an inuse heap profile after a collection.
func writeHeapProfile(path string, log *slog.Logger) {
	f, err := os.Create(path)
	if err != nil {
		log.Warn("heap profile", "err", err)
		return
	}
	goruntime.GC()
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Warn("heap profile", "err", err)
	}
}
