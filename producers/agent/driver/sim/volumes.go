package sim

import (
	"context"
	"errors"

	"github.com/vmplane/vmplane/schemas"
)

// errVolumesNotBuilt stands until the driver carries out volume commands.
var errVolumesNotBuilt = errors.New("volume commands are not built in this driver yet")

// AttachVolume is not built yet.
func (d *Driver) AttachVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	return errVolumesNotBuilt
}

// DetachVolume is not built yet.
func (d *Driver) DetachVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	return errVolumesNotBuilt
}

// ResizeVolume is not built yet.
func (d *Driver) ResizeVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	return errVolumesNotBuilt
}

// SnapshotVolume is not built yet.
func (d *Driver) SnapshotVolume(ctx context.Context, hostID, vmID string, v schemas.Volume, name string) error {
	return errVolumesNotBuilt
}

// DeleteVolume is not built yet.
func (d *Driver) DeleteVolume(ctx context.Context, hostID, vmID string, v schemas.Volume) error {
	return errVolumesNotBuilt
}
