package qemu

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vmplane/vmplane/schemas"
)

// A volume the control plane calls Allocated is made when its file is
// missing; a Ready or Detached one whose file is missing is refused and
// never made again blank (its pool may not be mounted).
func TestReadyVolumeIsNeverMadeAgain(t *testing.T) {
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img is not installed")
	}
	d := &Driver{}
	v := schemas.Volume{VolumeID: "vm1-data-1", Kind: schemas.VolumeData, DeviceID: 1, PoolID: "p1",
		PoolPath: t.TempDir(), SizeMB: 16, State: schemas.VolumeAllocated}
	if err := d.ensureVolume(t.Context(), v); err != nil {
		t.Fatalf("allocated volume: %v", err)
	}
	if _, err := os.Stat(volumePath(v)); err != nil {
		t.Fatalf("allocated volume has no file: %v", err)
	}
	if err := os.Remove(volumePath(v)); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{schemas.VolumeReady, schemas.VolumeDetached} {
		v.State = state
		if err := d.ensureVolume(t.Context(), v); err == nil || !strings.Contains(err.Error(), "is missing") {
			t.Errorf("%s volume without its file: %v", state, err)
		}
		if _, err := os.Stat(volumePath(v)); err == nil {
			t.Errorf("%s volume's file was made again", state)
		}
	}
}
