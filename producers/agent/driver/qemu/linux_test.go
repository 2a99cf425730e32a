package qemu

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/qemu/linux"
	"github.com/vmplane/vmplane/schemas"
)

// The Linux guest tests boot the tiny-linux template (package linux) from
// the kernel ops/install.sh unpacks, with volumes and a NIC, and read what
// the guest prints on its console.

const testTemplate = "tiny-linux"

var (
	templatesOnce sync.Once
	templatesDir  string
	templatesErr  error
)

// templates builds the template once per test binary, into a directory
// removed when the binary's tests end (TestMain).
func templates(t *testing.T) string {
	t.Helper()
	templatesOnce.Do(func() {
		templatesDir, templatesErr = os.MkdirTemp("", "vmtpl")
		if templatesErr == nil {
			templatesErr = linux.Ensure(t.Context(), linux.Config{}, filepath.Join(templatesDir, testTemplate))
		}
	})
	if templatesErr != nil {
		t.Fatalf("guest template (run ops/install.sh): %v", templatesErr)
	}
	return templatesDir
}

// linuxDriver is a driver of host q1 whose guests boot the template; a
// graceful stop waits as long as a real guest needs.
func linuxDriver(t *testing.T) *Driver {
	t.Helper()
	dir := guestDir(t)
	cfg := testConfig(dir, "q1", "q2")
	cfg.Templates = templates(t)
	cfg.StopTimeout = 30 * time.Second
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// console waits until the VM's console log holds each of want, in order,
// after offset; it returns the offset past the last one.
func console(t *testing.T, d *Driver, vm string, offset int, timeout time.Duration, want ...string) int {
	t.Helper()
	path := filepath.Join(d.cfg.Dir, vm, consoleLog)
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(path)
		at, missing := offset, ""
		for _, w := range want {
			i := strings.Index(string(b[min(at, len(b)):]), w)
			if i < 0 {
				missing = w
				break
			}
			at += i + len(w)
		}
		if missing == "" {
			return at
		}
		if time.Now().After(deadline) {
			t.Fatalf("console of %s: no %q after %v; it shows:\n%s", vm, missing, timeout, tailOf(b[min(offset, len(b)):]))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tailOf(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// consoleEnd is the current length of the VM's console log.
func consoleEnd(d *Driver, vm string) int {
	st, err := os.Stat(filepath.Join(d.cfg.Dir, vm, consoleLog))
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// typeInto types line on the VM's serial console, as an operator would.
func typeInto(t *testing.T, d *Driver, host, vm, line string) {
	t.Helper()
	c, err := net.Dial("unix", filepath.Join(d.cfg.Dir, vm, host+".console"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	// The socket is closed only once QEMU has read the line.
	time.Sleep(100 * time.Millisecond)
}

func linuxSpec(id, pool string) agent.VMSpec {
	return agent.VMSpec{ID: id, Name: "linux", CPU: 1, MemoryMB: 128,
		Volumes: []schemas.Volume{
			{VolumeID: id + "-root", Kind: schemas.VolumeRoot, DeviceID: 0, PoolPath: pool, SizeMB: 1024, TemplateID: testTemplate},
			{VolumeID: id + "-data", Kind: schemas.VolumeData, DeviceID: 1, PoolPath: pool, SizeMB: 64},
		},
		Nics: []schemas.Nic{{NicID: "n1", DeviceID: 0, MAC: "02:00:0A:09:00:0A", IP: "10.9.0.10", Gateway: "10.9.0.1", Cidr: "10.9.0.0/24"}},
	}
}

// TestLinuxGuest boots a Linux guest with a root overlay, a data volume and
// a NIC, hot-plugs, resizes, snapshots, detaches and deletes a volume, and
// stops it gracefully.
func TestLinuxGuest(t *testing.T) {
	d := linuxDriver(t)
	ctx := t.Context()
	pool := t.TempDir()
	spec := linuxSpec("lin1", pool)
	start := time.Now()
	if err := d.Start(ctx, "q1", spec); err != nil {
		t.Fatal(err)
	}
	at := console(t, d, "lin1", 0, time.Minute, "Linux version", "vmplane-guest: disk vda 1024 MiB", "vmplane-guest: disk vdb 64 MiB",
		"vmplane-guest: nic eth0 mac 02:00:0a:09:00:0a ip 10.9.0.10/24", "vmplane-guest: ready")
	t.Logf("booted in %v", time.Since(start).Round(time.Millisecond))
	expect(t, d, "q1", "lin1", schemas.PowerOn)
	root := volumePath(spec.Volumes[0])
	if out, err := exec.Command("qemu-img", "info", "-U", root).CombinedOutput(); err != nil || !strings.Contains(string(out), "backing file: "+filepath.Join(d.cfg.Templates, testTemplate, "disk.qcow2")) {
		t.Fatalf("root volume is not an overlay of the template: %v\n%s", err, out)
	}

	extra := schemas.Volume{VolumeID: "lin1-extra", Kind: schemas.VolumeData, DeviceID: 2, PoolPath: pool, SizeMB: 32}
	if err := d.AttachVolume(ctx, "q1", "lin1", extra); err != nil {
		t.Fatal(err)
	}
	at = console(t, d, "lin1", at, 30*time.Second, "vmplane-guest: hotplug add disk vdc 32 MiB")
	if err := d.AttachVolume(ctx, "q1", "lin1", extra); err != nil {
		t.Fatalf("attach again: %v", err)
	}
	extra.SizeMB = 48
	if err := d.ResizeVolume(ctx, "q1", "lin1", extra); err != nil {
		t.Fatal(err)
	}
	if size, err := virtualSize(ctx, volumePath(extra)); err != nil || size != 48<<20 {
		t.Fatalf("size after resize: %d, %v", size, err)
	}
	extra.SizeMB = 16
	if err := d.ResizeVolume(ctx, "q1", "lin1", extra); err == nil || !strings.Contains(err.Error(), "shrinking") {
		t.Fatalf("shrink: %v", err)
	}
	extra.SizeMB = 48
	for range 2 {
		if err := d.SnapshotVolume(ctx, "q1", "lin1", extra, "s1"); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := fileSnapshots(ctx, volumePath(extra)); err != nil || !slices.Equal(names, []string{schemas.VolumeSnapshotPrefix + "s1"}) {
		t.Fatalf("volume snapshots %v, %v", names, err)
	}
	// A VM snapshot is one in each of its disks.
	if err := d.Snapshot(ctx, "q1", "lin1", "whole"); err != nil {
		t.Fatal(err)
	}
	for _, v := range append(slices.Clone(spec.Volumes), extra) {
		if names, err := fileSnapshots(ctx, volumePath(v)); err != nil || !slices.Contains(names, "whole") {
			t.Fatalf("snapshots of %s: %v, %v", v.VolumeID, names, err)
		}
	}
	if err := d.DeleteVolume(ctx, "q1", "lin1", extra); err == nil {
		t.Fatal("an attached volume was deleted")
	}
	if err := d.DetachVolume(ctx, "q1", "lin1", extra); err != nil {
		t.Fatal(err)
	}
	at = console(t, d, "lin1", at, 30*time.Second, "vmplane-guest: hotplug remove disk vdc")
	if err := d.DetachVolume(ctx, "q1", "lin1", extra); err != nil {
		t.Fatalf("detach again: %v", err)
	}
	for range 2 {
		if err := d.DeleteVolume(ctx, "q1", "lin1", extra); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(volumePath(extra)); !os.IsNotExist(err) {
		t.Fatalf("deleted volume's file: %v", err)
	}

	stop := time.Now()
	if err := d.Stop(ctx, "q1", "lin1", false); err != nil {
		t.Fatal(err)
	}
	console(t, d, "lin1", at, time.Second, "vmplane-guest: ACPI power button pressed", "vmplane-guest: powering off", "reboot: Power down")
	t.Logf("graceful stop in %v", time.Since(stop).Round(time.Millisecond))
	expect(t, d, "q1", "lin1", schemas.PowerOff)
	if err := d.RevertSnapshot(ctx, "q1", "lin1", "whole"); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteSnapshot(ctx, "q1", "lin1", "whole"); err != nil {
		t.Fatal(err)
	}
	if names, err := d.Snapshots(ctx, "q1", "lin1"); err != nil || len(names) != 0 {
		t.Fatalf("snapshots after delete: %v, %v", names, err)
	}

	// Started again, from the files it had: then powered off from inside.
	at = consoleEnd(d, "lin1")
	if err := d.Start(ctx, "q1", spec); err != nil {
		t.Fatal(err)
	}
	at = console(t, d, "lin1", at, time.Minute, "vmplane-guest: disk vda 1024 MiB", "vmplane-guest: ready")
	for len(d.Changes()) > 0 {
		<-d.Changes() // only the power-off's change counts below
	}
	typed := time.Now()
	typeInto(t, d, "q1", "lin1", "poweroff")
	seen := waitChangeWithin(t, d, "lin1", 10*time.Second)
	if got := power(t, d, "q1", "lin1"); got != schemas.PowerOff {
		t.Fatalf("after the guest's poweroff: %s, want %s", got, schemas.PowerOff)
	}
	powerDown := consoleTime(t, d, "lin1", at, "reboot: Power down")
	if lag := seen.Sub(powerDown); lag > time.Second {
		t.Fatalf("the guest powered off at %v, its change came %v later", powerDown.Sub(typed), lag)
	}
	t.Logf("poweroff typed: change after %v", seen.Sub(typed).Round(time.Millisecond))

	// Rebuilt: the root is made again of its template and boots.
	at = consoleEnd(d, "lin1")
	if err := d.Rebuild(ctx, "q1", "lin1", testTemplate, spec.Volumes); err != nil {
		t.Fatal(err)
	}
	at = console(t, d, "lin1", at, time.Minute, "vmplane-guest: disk vdb 64 MiB", "vmplane-guest: ready")

	// Live-migrated with its disks and NIC, it goes on where it was.
	if err := d.Migrate(ctx, "q1", "lin1", "q2", spec); err != nil {
		t.Fatal(err)
	}
	expect(t, d, "q2", "lin1", schemas.PowerOn)
	typeInto(t, d, "q2", "lin1", "echo still-$((6*7))")
	console(t, d, "lin1", at, 10*time.Second, "still-42")
	if err := d.Stop(ctx, "q2", "lin1", true); err != nil {
		t.Fatal(err)
	}
	expect(t, d, "q2", "lin1", schemas.PowerOff)

	if err := d.Destroy(ctx, "q2", "lin1", spec.Volumes); err != nil {
		t.Fatal(err)
	}
	for _, v := range spec.Volumes {
		if _, err := os.Stat(volumePath(v)); !os.IsNotExist(err) {
			t.Fatalf("volume %s after destroy: %v", v.VolumeID, err)
		}
	}
}

// waitChangeWithin returns when the change for vm arrived.
func waitChangeWithin(t *testing.T, d *Driver, vm string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case c := <-d.Changes():
			if c.VmID == vm {
				return time.Now()
			}
		case <-deadline:
			t.Fatalf("no change for %s within %v", vm, timeout)
		}
	}
}

// consoleTime returns when the guest wrote line, its last one (it powered
// off after it): the console log's last change.
func consoleTime(t *testing.T, d *Driver, vm string, offset int, line string) time.Time {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(d.cfg.Dir, vm, consoleLog))
	if !strings.Contains(string(b[min(offset, len(b)):]), line) {
		t.Fatalf("console of %s: no %q:\n%s", vm, line, tailOf(b[min(offset, len(b)):]))
	}
	st, err := os.Stat(filepath.Join(d.cfg.Dir, vm, consoleLog))
	if err != nil {
		t.Fatal(err)
	}
	return st.ModTime()
}

// childLinux is a child agent's step (adopt_test.go): "linux" starts a
// Linux guest with its volumes in pool and waits until it has booted;
// "halfplug" does the first half of attaching a volume — file, record,
// block node — as an agent killed before the disk device would.
func childLinux(ctx context.Context, d *Driver, op, host, vm, pool string) error {
	if op == "linux" {
		if err := d.Start(ctx, host, linuxSpec(vm, pool)); err != nil {
			return err
		}
		for !strings.Contains(readFile(filepath.Join(d.cfg.Dir, vm, consoleLog)), "vmplane-guest: ready") {
			if ctx.Err() != nil {
				return errors.New("the guest did not boot")
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	}
	g, p, err := d.running(host, vm)
	if err != nil {
		return err
	}
	v := extraVolume(vm, pool)
	if err := d.ensureVolume(ctx, v); err != nil {
		return err
	}
	d.setVolumes(g, append(g.spec.Volumes, v))
	if err := d.save(g); err != nil {
		return err
	}
	node := map[string]any{"driver": "qcow2", "node-name": nodeName(v), "file": map[string]any{"driver": "file", "filename": volumePath(v)}}
	_, err = p.execute(ctx, "blockdev-add", node)
	return err
}

func extraVolume(vm, pool string) schemas.Volume {
	return schemas.Volume{VolumeID: vm + "-extra", Kind: schemas.VolumeData, DeviceID: 2, PoolPath: pool, SizeMB: 32}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestLinuxGuestOutlivesTheAgent: an agent killed half-way through
// attaching a volume leaves the guest running; the next driver adopts it
// with its volumes, finishes the attach (the guest announces the disk),
// detaches it and stops the guest through ACPI.
func TestLinuxGuestOutlivesTheAgent(t *testing.T) {
	dir := guestDir(t)
	tpl := templates(t)
	pool := t.TempDir()
	t.Setenv(childTemplates, tpl)
	killedAgent(t, dir, []string{"q1"}, "linux q1 lin2 "+pool, "halfplug q1 lin2 "+pool)

	cfg := testConfig(dir, "q1")
	cfg.Templates = tpl
	cfg.StopTimeout = 30 * time.Second
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	ctx := t.Context()
	expect(t, d, "q1", "lin2", schemas.PowerOn)
	at := consoleEnd(d, "lin2")
	extra := extraVolume("lin2", pool)
	if err := d.AttachVolume(ctx, "q1", "lin2", extra); err != nil {
		t.Fatal(err)
	}
	at = console(t, d, "lin2", at, 30*time.Second, "vmplane-guest: hotplug add disk vdc 32 MiB")
	if err := d.DetachVolume(ctx, "q1", "lin2", extra); err != nil {
		t.Fatal(err)
	}
	at = console(t, d, "lin2", at, 30*time.Second, "vmplane-guest: hotplug remove disk vdc")
	if err := d.Stop(ctx, "q1", "lin2", false); err != nil {
		t.Fatal(err)
	}
	console(t, d, "lin2", at, time.Second, "vmplane-guest: ACPI power button pressed", "reboot: Power down")
	expect(t, d, "q1", "lin2", schemas.PowerOff)
	r, err := readRecord(filepath.Join(dir, "lin2"))
	if err != nil || len(r.Spec.Volumes) != 2 || len(r.Spec.Nics) != 1 {
		t.Fatalf("record after detach: %+v, %v", r.Spec, err)
	}
}
