package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vmplane/vmplane/producers/agent"
	"github.com/vmplane/vmplane/producers/agent/driver/qemu/linux"
	"github.com/vmplane/vmplane/schemas"
)

// Devices of a guest: its disks (the volumes, or the tiny disk of a VM
// without volumes), its NICs, its serial console and, when its root
// volume's template has a kernel, what QEMU boots directly.

// consoleLog is the VM's serial console as the guest printed it, kept
// across restarts.
const consoleLog = "console.log"

// unplugWait bounds the wait for a guest to let go of a disk.
const unplugWait = 30 * time.Second

// pciSlot is a disk's PCI slot, fixed by its device id (see nicArgs).
func pciSlot(v schemas.Volume) string { return fmt.Sprintf("%#x", 8+v.DeviceID) }

// deviceArgs are QEMU's options for g's disks, NICs, console and boot;
// host names the console's socket.
func (d *Driver) deviceArgs(g *guest, host string, rescued bool) ([]string, error) {
	nics, err := checkNics(g.spec.Nics)
	if err != nil {
		return nil, err
	}
	args := []string{
		// The console: a socket a test or an operator may type into, and
		// a log of everything the guest printed.
		"-chardev", "socket,id=console,path=" + filepath.Join(g.dir, host+".console") + ",server=on,wait=off,logfile=" +
			filepath.Join(g.dir, consoleLog) + ",logappend=on",
		"-serial", "chardev:console",
	}
	if len(g.spec.Volumes) == 0 {
		args = append(args, "-drive", "file="+filepath.Join(g.dir, "disk.qcow2")+",format=qcow2,if=ide,index=0")
	}
	for _, v := range byDevice(g.spec.Volumes) {
		args = append(args, "-blockdev", blockdev(v),
			"-device", "virtio-blk-pci,drive="+nodeName(v)+",id="+deviceName(v)+",addr="+pciSlot(v))
	}
	args = append(args, nicArgs(nics)...)
	if root, ok := rootOf(g.spec.Volumes); ok && root.TemplateID != "" && !rescued {
		args = append(args, d.kernelArgs(root.TemplateID, nics)...)
	}
	return args, nil
}

// blockdev is the -blockdev option of a volume: its qcow2 file.
func blockdev(v schemas.Volume) string {
	return "driver=qcow2,node-name=" + nodeName(v) + ",file.driver=file,file.filename=" + volumePath(v)
}

// kernelArgs boot the template's kernel and initramfs directly when it has
// them, the NICs' addresses on the kernel command line; a template
// without a kernel boots from its disk.
func (d *Driver) kernelArgs(template string, nics []nicConfig) []string {
	dir := d.templateDir(template)
	kernel := filepath.Join(dir, linux.KernelName)
	if _, err := os.Stat(kernel); err != nil {
		return nil
	}
	cmdline := strings.TrimSpace("console=ttyS0 panic=-1 " + nicCmdline(nics))
	return []string{"-kernel", kernel, "-initrd", filepath.Join(dir, linux.InitrdName), "-append", cmdline}
}

// bootsKernel says whether g boots a template's kernel: such a guest is a
// real Linux and gets the memory its offering says.
func (d *Driver) bootsKernel(g *guest) bool {
	root, ok := rootOf(g.spec.Volumes)
	if !ok || root.TemplateID == "" || d.cfg.Templates == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(d.templateDir(root.TemplateID), linux.KernelName))
	return err == nil
}

// memoryMB is what g really gets: a Linux guest its offering's memory, at
// least LinuxMemoryMB; a guest without an OS GuestMemoryMB at most.
func (d *Driver) memoryMB(g *guest) int64 {
	if d.bootsKernel(g) {
		return max(g.spec.MemoryMB, d.cfg.LinuxMemoryMB)
	}
	if g.spec.MemoryMB > 0 {
		return min(g.spec.MemoryMB, d.cfg.GuestMemoryMB)
	}
	return d.cfg.GuestMemoryMB
}

// plug hot-plugs v into the running p: its block node, then its disk
// device, each only when missing, so a retry after a crash finishes what
// was half done. The guest sees a new virtio disk (ACPI PCI hot-plug).
func plug(ctx context.Context, p *process, v schemas.Volume) error {
	has, err := hasNode(ctx, p, nodeName(v))
	if err != nil {
		return err
	}
	if !has {
		node := map[string]any{"driver": "qcow2", "node-name": nodeName(v),
			"file": map[string]any{"driver": "file", "filename": volumePath(v)}}
		if _, err := p.execute(ctx, "blockdev-add", node); err != nil {
			return err
		}
	}
	if has, err = hasDevice(ctx, p, deviceName(v)); err != nil || has {
		return err
	}
	_, err = p.execute(ctx, "device_add", map[string]any{"driver": "virtio-blk-pci", "drive": nodeName(v),
		"id": deviceName(v), "addr": pciSlot(v)})
	return err
}

// unplug takes v out of the running p: it asks the guest to let go of the
// disk (device_del, ACPI eject), waits until it has, then drops the block
// node. What is gone already is skipped.
func unplug(ctx context.Context, p *process, v schemas.Volume) error {
	has, err := hasDevice(ctx, p, deviceName(v))
	if err != nil {
		return err
	}
	if has {
		if _, err := p.execute(ctx, "device_del", map[string]any{"id": deviceName(v)}); err != nil {
			return err
		}
		if err := waitUnplugged(ctx, p, deviceName(v)); err != nil {
			return err
		}
	}
	if has, err = hasNode(ctx, p, nodeName(v)); err != nil || !has {
		return err
	}
	// The device leaves the tree a moment before it lets go of its node.
	deadline := time.Now().Add(unplugWait)
	for {
		_, err = p.execute(ctx, "blockdev-del", map[string]any{"node-name": nodeName(v)})
		var qe *QMPError
		if err == nil || !errors.As(err, &qe) || !strings.Contains(qe.Desc, "in use") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitUnplugged waits until the guest has released the device.
func waitUnplugged(ctx context.Context, p *process, id string) error {
	deadline := time.Now().Add(unplugWait)
	for {
		has, err := hasDevice(ctx, p, id)
		if err != nil || !has {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the guest did not release disk %s within %v", id, unplugWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return errors.New("qemu exited")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hasDevice says whether p has a device of that id.
func hasDevice(ctx context.Context, p *process, id string) (bool, error) {
	ret, err := p.execute(ctx, "qom-list", map[string]any{"path": "/machine/peripheral"})
	if err != nil {
		return false, err
	}
	var props []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(ret, &props); err != nil {
		return false, fmt.Errorf("qom-list answer: %w", err)
	}
	return slices.ContainsFunc(props, func(p struct {
		Name string `json:"name"`
	}) bool {
		return p.Name == id
	}), nil
}

// hasNode says whether p has a block node of that name.
func hasNode(ctx context.Context, p *process, name string) (bool, error) {
	ret, err := p.execute(ctx, "query-named-block-nodes", map[string]any{"flat": true})
	if err != nil {
		return false, err
	}
	var nodes []struct {
		NodeName string `json:"node-name"`
	}
	if err := json.Unmarshal(ret, &nodes); err != nil {
		return false, fmt.Errorf("query-named-block-nodes answer: %w", err)
	}
	for _, n := range nodes {
		if n.NodeName == name {
			return true, nil
		}
	}
	return false, nil
}

// sizeArg is a size in MiB as qemu-img takes it.
func sizeArg(mb int64) string { return strconv.FormatInt(mb, 10) + "M" }

// checkSpec refuses a VM whose volumes or NICs could not be given to QEMU.
func checkSpec(spec agent.VMSpec) error {
	if err := checkVolumes(spec.Volumes); err != nil {
		return err
	}
	_, err := checkNics(spec.Nics)
	return err
}
