package qemu

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/schemas"
)

// The first agent of the adoption tests is a child process of the test
// binary, so that it dies as an agent does: SIGKILL between two lines,
// nothing closed, nothing quit.
const (
	childDir   = "VMPLANE_QEMU_CHILD_DIR"
	childHosts = "VMPLANE_QEMU_CHILD_HOSTS"
	childSteps = "VMPLANE_QEMU_CHILD_STEPS"
	// childTemplates is the child driver's Config.Templates.
	childTemplates = "VMPLANE_QEMU_CHILD_TEMPLATES"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDir); dir != "" {
		os.Exit(childAgent(dir, strings.Split(os.Getenv(childHosts), ","), os.Getenv(childSteps)))
	}
	code := m.Run()
	if templatesDir != "" {
		os.RemoveAll(templatesDir)
	}
	os.Exit(code)
}

// childAgent runs steps ("op host vm [arg]", separated by ";") in a
// driver on dir, says ready and waits to be killed.
func childAgent(dir string, hosts []string, steps string) int {
	cfg := testConfig(dir, hosts...)
	cfg.Templates = os.Getenv(childTemplates)
	d, err := New(cfg)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, step := range strings.Split(steps, ";") {
		f := strings.Fields(step)
		if len(f) < 3 {
			continue
		}
		if err := childStep(ctx, d, f[0], f[1], f[2], f[3:]); err != nil {
			fmt.Printf("error: %s: %v\n", step, err)
			return 1
		}
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour)
	}
}

func childStep(ctx context.Context, d *Driver, op, host, vm string, args []string) error {
	switch op {
	case "start":
		return d.Start(ctx, host, agent.VMSpec{ID: vm, Name: "n-" + vm, CPU: 1, MemoryMB: 64})
	case "stop":
		return d.Stop(ctx, host, vm, true)
	case "pause":
		return d.Pause(ctx, host, vm)
	case "suspend":
		return d.Suspend(ctx, host, vm)
	case "migrate":
		return d.Migrate(ctx, host, vm, args[0], agent.VMSpec{ID: vm})
	case "incoming", "streamed":
		return childMigrate(ctx, d, op, host, vm)
	case "linux", "halfplug":
		return childLinux(ctx, d, op, host, vm, args[0])
	case "saved":
		// What Suspend leaves when its agent dies once the memory is
		// saved and recorded, before QEMU quits.
		g, p, err := d.running(host, vm)
		if err != nil {
			return err
		}
		if _, err := p.execute(ctx, "stop", nil); err != nil {
			return err
		}
		if err := migrateTo(ctx, p, "exec:cat > "+filepath.Join(g.dir, "state.bin")); err != nil {
			return err
		}
		d.setSuspended(g, true)
		return d.save(g)
	}
	return fmt.Errorf("unknown step %s", op)
}

// childMigrate does the first part of Migrate to host, as an agent that
// dies half-way would: "incoming" starts the destination only, a QEMU
// waiting for a stream that never comes; "streamed" sends the stream too,
// so the destination runs while the source waits in postmigrate and the
// record still names the source.
func childMigrate(ctx context.Context, d *Driver, op, host, vm string) error {
	d.mu.Lock()
	g := d.vms[vm]
	d.mu.Unlock()
	if g == nil {
		return fmt.Errorf("vm %s not started", vm)
	}
	src := d.procOf(g)
	port, err := freePort()
	if err != nil {
		return err
	}
	uri := "tcp:127.0.0.1:" + strconv.Itoa(port)
	dst := &guest{id: vm, host: host, spec: g.spec, dir: g.dir}
	if err := d.launch(ctx, dst, host, uri, src.pid); err != nil || op == "incoming" {
		return err
	}
	if err := migrateTo(ctx, src, uri); err != nil {
		return err
	}
	return waitIncoming(ctx, d.procOf(dst))
}

// killedAgent runs steps in a driver of hosts on dir in a child process,
// then kills it with SIGKILL; its guests stay behind.
func killedAgent(t *testing.T, dir string, hosts []string, steps ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childDir+"="+dir, childHosts+"="+strings.Join(hosts, ","), childSteps+"="+strings.Join(steps, ";"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		said <- sc.Text()
	}()
	var line string
	select {
	case line = <-said:
	case <-time.After(time.Minute):
		line = "no answer in a minute"
	}
	cmd.Process.Kill()
	cmd.Wait()
	if line != "ready" {
		t.Fatalf("child agent: %s\n%s", line, stderr.String())
	}
}

// qemuPids lists the live QEMU processes running vm: what `pgrep -f` finds
// for its -name, zombies left out (their command line is empty).
func qemuPids(t *testing.T, vm string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte("qemu-system")) && bytes.Contains(cmd, []byte("\x00-name\x00"+vm+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// onePid returns vm's one QEMU process and fails when there are others.
func onePid(t *testing.T, vm string) int {
	t.Helper()
	pids := qemuPids(t, vm)
	if len(pids) != 1 {
		t.Fatalf("%s: %d qemu processes %v, want 1", vm, len(pids), pids)
	}
	return pids[0]
}

func noPid(t *testing.T, vm string) {
	t.Helper()
	// A quit QEMU is gone within milliseconds of saying so.
	deadline := time.Now().Add(2 * time.Second)
	for pids := qemuPids(t, vm); len(pids) > 0; pids = qemuPids(t, vm) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: qemu processes %v, want none", vm, pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killGuests kills every QEMU whose pid file lies under dir.
func killGuests(t *testing.T, dir string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte("\x00-pidfile\x00"+dir+"/")) {
			t.Logf("killing guest pid %d left under %s", pid, dir)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func vmID(prefix string) string { return fmt.Sprintf("%s%06x", prefix, rand.Uint32()&0xffffff) }

// TestAdoption kills an agent with guests in every state and checks that a
// new driver on the same directory takes them as they are: reported at
// once, started never twice, stopped and destroyed like its own; a guest
// of another driver's host is left alone.
func TestAdoption(t *testing.T) {
	dir := guestDir(t)
	ctx := t.Context()
	on, paused, off, moved, susp, far, stray := vmID("on"), vmID("pa"), vmID("of"), vmID("mv"), vmID("su"), vmID("fa"), vmID("st")
	killedAgent(t, dir, []string{"q1", "q2"},
		"start q1 "+on,
		// Never commanded by the new driver, so unknown to the control
		// plane as far as it can tell: reported all the same.
		"start q2 "+paused, "pause q2 "+paused,
		"start q1 "+off, "stop q1 "+off,
		"start q1 "+moved, "migrate q1 "+moved+" q2",
		"start q1 "+susp, "suspend q1 "+susp)
	killedAgent(t, dir, []string{"far"}, "start far "+far, "start far "+stray)
	// A directory that names one of our hosts while its guest runs under
	// another's pid file: reported off here, and never started twice.
	r, err := readRecord(filepath.Join(dir, stray))
	if err != nil {
		t.Fatal(err)
	}
	r.Host = "q1"
	if err := writeRecord(filepath.Join(dir, stray), r); err != nil {
		t.Fatal(err)
	}

	onPid := onePid(t, on)
	onePid(t, paused)
	noPid(t, off)
	onePid(t, moved)
	noPid(t, susp)
	farPid, strayPid := onePid(t, far), onePid(t, stray)
	if r, err := readRecord(filepath.Join(dir, moved)); err != nil || r.Host != "q2" {
		t.Fatalf("record of the migrated vm: %+v %v, want host q2", r, err)
	}
	if isGuest(onPid, pidPath(filepath.Join(dir, on), "q2")) || isGuest(os.Getpid(), pidPath(filepath.Join(dir, on), "q1")) {
		t.Fatal("a pid taken for a guest its command line does not name")
	}
	offDisk, err := os.Stat(filepath.Join(dir, off, "disk.qcow2"))
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	d := newDriverOn(t, dir, "q1", "q2")
	t.Logf("adopted in %v", time.Since(began).Round(time.Millisecond))
	for _, c := range []struct{ host, vm, want string }{
		{"q1", on, schemas.PowerOn},
		{"q2", paused, schemas.PowerPaused},
		{"q1", off, schemas.PowerOff},
		{"q2", moved, schemas.PowerOn},
		{"q1", moved, "absent"},
		{"q1", susp, schemas.PowerSusp},
		{"q1", far, "absent"},
		{"q2", far, "absent"},
		{"q1", stray, schemas.PowerOff},
	} {
		expect(t, d, c.host, c.vm, c.want)
	}

	// Start answers ok for what runs, and starts nothing.
	if err := d.Start(ctx, "q1", agent.VMSpec{ID: on, MemoryMB: 64}); err != nil {
		t.Fatalf("start of an adopted running vm: %v", err)
	}
	if got := onePid(t, on); got != onPid {
		t.Fatalf("%s: pid %d after start, was %d", on, got, onPid)
	}
	if err := d.Start(ctx, "q2", agent.VMSpec{ID: on, MemoryMB: 64}); err == nil {
		t.Fatalf("start of %s on q2 while it runs on q1 succeeded", on)
	}
	onePid(t, on)
	if err := d.Start(ctx, "q1", agent.VMSpec{ID: stray, MemoryMB: 64}); err == nil {
		t.Fatalf("start of %s while it runs under host far succeeded", stray)
	}
	onePid(t, stray)

	// The stopped one starts from its own disk, the suspended one resumes.
	if err := d.Start(ctx, "q1", agent.VMSpec{ID: off, MemoryMB: 64}); err != nil {
		t.Fatal(err)
	}
	expect(t, d, "q1", off, schemas.PowerOn)
	if disk, err := os.Stat(filepath.Join(dir, off, "disk.qcow2")); err != nil || !os.SameFile(disk, offDisk) {
		t.Fatalf("%s: disk replaced on start (%v)", off, err)
	}
	if err := d.Start(ctx, "q1", agent.VMSpec{ID: susp, MemoryMB: 64}); err != nil {
		t.Fatal(err)
	}
	expect(t, d, "q1", susp, schemas.PowerOn)
	onePid(t, susp)

	// Stop and destroy an adopted guest like one of its own.
	if err := d.Stop(ctx, "q1", on, true); err != nil {
		t.Fatal(err)
	}
	expect(t, d, "q1", on, schemas.PowerOff)
	noPid(t, on)
	if err := d.Start(ctx, "q1", agent.VMSpec{ID: on, MemoryMB: 64}); err != nil {
		t.Fatal(err)
	}
	onePid(t, on)
	if err := d.Unpause(ctx, "q2", paused); err != nil {
		t.Fatal(err)
	}
	expect(t, d, "q2", paused, schemas.PowerOn)
	for _, v := range []struct{ host, vm string }{{"q1", on}, {"q2", paused}, {"q2", moved}} {
		if err := d.Destroy(ctx, v.host, v.vm, nil); err != nil {
			t.Fatal(err)
		}
		expect(t, d, v.host, v.vm, "absent")
		noPid(t, v.vm)
		if _, err := os.Stat(filepath.Join(dir, v.vm)); !os.IsNotExist(err) {
			t.Fatalf("%s: directory left after destroy: %v", v.vm, err)
		}
	}

	// Closing quits the driver's guests, never another driver's.
	d.Close()
	for _, vm := range []string{off, susp} {
		noPid(t, vm)
	}
	for vm, pid := range map[string]int{far: farPid, stray: strayPid} {
		if got := onePid(t, vm); got != pid {
			t.Fatalf("%s: pid %d, was %d", vm, got, pid)
		}
		syscall.Kill(pid, syscall.SIGKILL)
		noPid(t, vm)
	}
}

// TestAdoptionHalfWay kills agents in the middle of a migration or a
// suspend, where two processes or a saved memory image are left, and checks
// that the next driver keeps the one copy that holds the guest.
func TestAdoptionHalfWay(t *testing.T) {
	dir := guestDir(t)
	waiting, streamed, saved := vmID("wa"), vmID("sm"), vmID("sv")
	killedAgent(t, dir, []string{"q1", "q2"},
		"start q1 "+waiting, "incoming q2 "+waiting,
		"start q1 "+streamed, "streamed q2 "+streamed,
		"start q1 "+saved, "saved q1 "+saved)
	for _, vm := range []string{waiting, streamed} {
		if n := len(qemuPids(t, vm)); n != 2 {
			t.Fatalf("%s: %d processes before adoption, want a source and a destination", vm, n)
		}
	}
	onePid(t, saved)
	src := readPid(pidPath(filepath.Join(dir, waiting), "q1"))
	dst := readPid(pidPath(filepath.Join(dir, streamed), "q2"))

	d := newDriverOn(t, dir, "q1", "q2")
	for _, c := range []struct{ host, vm, want string }{
		{"q1", waiting, schemas.PowerOn}, // the source: the stream never came
		{"q2", waiting, "absent"},
		{"q2", streamed, schemas.PowerOn}, // the destination: the stream was through
		{"q1", streamed, "absent"},
		{"q1", saved, schemas.PowerSusp},
	} {
		expect(t, d, c.host, c.vm, c.want)
	}
	if got := onePid(t, waiting); got != src {
		t.Fatalf("%s: pid %d kept, not the source %d", waiting, got, src)
	}
	if got := onePid(t, streamed); got != dst {
		t.Fatalf("%s: pid %d kept, not the destination %d", streamed, got, dst)
	}
	if r, err := readRecord(filepath.Join(dir, streamed)); err != nil || r.Host != "q2" {
		t.Fatalf("record of %s: %+v %v, want host q2", streamed, r, err)
	}
	noPid(t, saved)
	if err := d.Start(t.Context(), "q1", agent.VMSpec{ID: saved, MemoryMB: 64}); err != nil {
		t.Fatal(err)
	}
	expect(t, d, "q1", saved, schemas.PowerOn)
	onePid(t, saved)
}

// TestStartTwoDrivers starts one VM from two drivers on one directory at
// once, as an agent and its restarted self could: one process only.
func TestStartTwoDrivers(t *testing.T) {
	dir := guestDir(t)
	a, b := newDriverOn(t, dir, "q1"), newDriverOn(t, dir, "q1")
	vm := vmID("tw")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, d := range []*Driver{a, b} {
		wg.Go(func() { errs[i] = d.Start(t.Context(), "q1", agent.VMSpec{ID: vm, MemoryMB: 64}) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("starts: %v, %v", errs[0], errs[1])
	}
	onePid(t, vm)
	// Whichever started it stops it; the other sees it go.
	a.Stop(t.Context(), "q1", vm, true)
	b.Stop(t.Context(), "q1", vm, true)
	noPid(t, vm)
	deadline := time.Now().Add(2 * time.Second)
	for _, d := range []*Driver{a, b} {
		for power(t, d, "q1", vm) != schemas.PowerOff {
			if time.Now().After(deadline) {
				t.Fatalf("%s still %s", vm, power(t, d, "q1", vm))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
