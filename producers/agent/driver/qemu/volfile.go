package qemu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vmplane/vmplane/producers/agent/driver/qemu/linux"
	"github.com/vmplane/vmplane/schemas"
)

// Volume files: each volume of a VM is the qcow2 file
// <PoolPath>/<VolumeID>.qcow2 — a root volume an overlay of its template's
// disk, a data volume a blank image. A file is made once, under the VM's
// lock, by creating it beside its name and renaming it into place, so a
// crash leaves no file or a whole one; it is kept until DeleteVolume or
// Destroy removes it.

// maxVolumeDevice bounds a volume's device id: each disk has a PCI slot of
// its own, 8 + device id (pciSlot), and the pc machine has 32.
const maxVolumeDevice = 23

// volumePath is a volume's file.
func volumePath(v schemas.Volume) string {
	return filepath.Join(v.PoolPath, v.VolumeID+".qcow2")
}

// checkVolume refuses a volume whose file could not be named safely: its
// id and pool path end up in paths QEMU parses as options.
func checkVolume(v schemas.Volume) error {
	switch {
	case !validID(v.VolumeID):
		return fmt.Errorf("volume id %q: not a file name", v.VolumeID)
	case v.PoolPath == "" || !filepath.IsAbs(v.PoolPath) || filepath.Clean(v.PoolPath) != v.PoolPath:
		return fmt.Errorf("volume %s: pool path %q is not a clean absolute path", v.VolumeID, v.PoolPath)
	case strings.ContainsAny(v.PoolPath, ",\n"):
		return fmt.Errorf("volume %s: pool path %q: a comma cannot be in QEMU's option values", v.VolumeID, v.PoolPath)
	case v.SizeMB < 0:
		return fmt.Errorf("volume %s: size %d MiB", v.VolumeID, v.SizeMB)
	case v.DeviceID < 0 || v.DeviceID > maxVolumeDevice:
		return fmt.Errorf("volume %s: device id %d is not in 0..%d", v.VolumeID, v.DeviceID, maxVolumeDevice)
	case v.TemplateID != "" && !validID(v.TemplateID):
		return fmt.Errorf("volume %s: template id %q: not a directory name", v.VolumeID, v.TemplateID)
	}
	return nil
}

// checkVolumes checks a VM's volumes: each, and no id or device twice.
func checkVolumes(vs []schemas.Volume) error {
	ids, devices := map[string]bool{}, map[int32]bool{}
	for _, v := range vs {
		if err := checkVolume(v); err != nil {
			return err
		}
		if ids[v.VolumeID] || devices[v.DeviceID] {
			return fmt.Errorf("volume %s (device %d): given twice", v.VolumeID, v.DeviceID)
		}
		ids[v.VolumeID], devices[v.DeviceID] = true, true
	}
	return nil
}

// byDevice returns vs in device order: the order of the guest's disks.
func byDevice(vs []schemas.Volume) []schemas.Volume {
	out := slices.Clone(vs)
	slices.SortFunc(out, func(a, b schemas.Volume) int { return int(a.DeviceID - b.DeviceID) })
	return out
}

// rootOf is the VM's root volume, if it has one.
func rootOf(vs []schemas.Volume) (schemas.Volume, bool) {
	for _, v := range vs {
		if v.Kind == schemas.VolumeRoot {
			return v, true
		}
	}
	return schemas.Volume{}, false
}

// nodeName and deviceName name a volume's block node and disk device in
// QEMU, the same on every start, hot-plug and restart of the agent: QEMU
// limits node names to 31 characters, and volume ids may be longer.
func nodeName(v schemas.Volume) string { return "v" + volumeHash(v.VolumeID) }

func deviceName(v schemas.Volume) string { return "d" + volumeHash(v.VolumeID) }

func volumeHash(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:10])
}

// templateDir is where a template's files are.
func (d *Driver) templateDir(id string) string { return filepath.Join(d.cfg.Templates, id) }

// ensureVolume makes v's file when it has none and was never made: the
// control plane calls a volume Allocated until a host has made its file.
// A Ready or Detached volume whose file is missing is refused, never made
// again blank: its pool may not be mounted, and a guest booted on an
// empty disk would write where the real one is hidden.
func (d *Driver) ensureVolume(ctx context.Context, v schemas.Volume) error {
	if _, err := os.Stat(volumePath(v)); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("volume %s: %w", v.VolumeID, err)
	}
	if v.State != "" && v.State != schemas.VolumeAllocated {
		return fmt.Errorf("volume %s is %s but its file %s is missing: is pool %s mounted on this host?", v.VolumeID, v.State, volumePath(v), v.PoolID)
	}
	return d.makeVolume(ctx, v)
}

// makeVolume makes v's file anew, replacing any old one only once the new
// one is complete: an overlay of its template's disk for a volume made of
// a template, else a blank image.
func (d *Driver) makeVolume(ctx context.Context, v schemas.Volume) error {
	file := volumePath(v)
	if err := os.MkdirAll(v.PoolPath, 0o700); err != nil {
		return fmt.Errorf("volume %s: pool: %w", v.VolumeID, err)
	}
	args := []string{"create", "-q", "-f", "qcow2"}
	if v.TemplateID != "" {
		if d.cfg.Templates == "" {
			return fmt.Errorf("volume %s of template %s: the driver has no templates directory", v.VolumeID, v.TemplateID)
		}
		base := filepath.Join(d.templateDir(v.TemplateID), linux.DiskName)
		if _, err := os.Stat(base); err != nil {
			return fmt.Errorf("volume %s: template %s: %w", v.VolumeID, v.TemplateID, err)
		}
		args = append(args, "-b", base, "-F", "qcow2")
	} else if v.SizeMB == 0 {
		return fmt.Errorf("volume %s: a blank volume needs a size", v.VolumeID)
	}
	args = append(args, file+".new")
	if v.SizeMB > 0 {
		args = append(args, strconv.FormatInt(v.SizeMB, 10)+"M")
	}
	if err := qemuImg(ctx, args...); err != nil {
		return fmt.Errorf("volume %s: %w", v.VolumeID, err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		return fmt.Errorf("volume %s: %w", v.VolumeID, err)
	}
	return nil
}

// virtualSize is the size of a qcow2 file as the guest sees it, in bytes.
// -U reads it while a running QEMU holds the file.
func virtualSize(ctx context.Context, file string) (int64, error) {
	out, err := exec.CommandContext(ctx, "qemu-img", "info", "-U", "--output=json", file).Output()
	if err != nil {
		return 0, fmt.Errorf("qemu-img info %s: %w", file, err)
	}
	var info struct {
		VirtualSize int64 `json:"virtual-size"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return 0, fmt.Errorf("qemu-img info %s: %w", file, err)
	}
	return info.VirtualSize, nil
}

// fileSnapshots lists the internal snapshots of a qcow2 file by name.
func fileSnapshots(ctx context.Context, file string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "qemu-img", "snapshot", "-U", "-l", file).Output()
	if err != nil {
		return nil, fmt.Errorf("snapshots of %s: %w", file, err)
	}
	var names []string
	lines := splitLines(string(out))
	for _, l := range lines[min(2, len(lines)):] {
		var id, tag string
		if n, _ := fmt.Sscan(l, &id, &tag); n == 2 {
			names = append(names, tag)
		}
	}
	slices.Sort(names)
	return names, nil
}

// qemuImg runs qemu-img; its complaint becomes the error.
func qemuImg(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "qemu-img", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img %s: %w: %s", args[0], err, bytes.TrimSpace(out))
	}
	return nil
}
