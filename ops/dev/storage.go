package dev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/readmodel"
	"github.com/vmplane/vmplane/schemas"
)

// Zones are the dev stack's zones: every agent's hosts are in zone-1.
var Zones = []string{"zone-1"}

// TinyLinux is the template every dev stack starts with: the small Linux
// whose image ops/install.sh builds into <templates>/tiny-linux/.
var TinyLinux = schemas.Template{ID: "tiny-linux", Name: "tiny-linux", Format: "qcow2", SizeMB: 1024, OsType: "Linux (busybox)"}

// primaryPoolMB is the seeded pools' capacity, 1,000 TiB: the sim fleet's
// VMs deploy with volumes only when they ask for a template, and a dev
// stack must not run out of a pool it never chose.
const primaryPoolMB = 1000 << 20

// PrimaryPool is the zone-wide pool seeded in zone, whose directory is
// dir/<zone>-primary.
func PrimaryPool(zone, dir string) schemas.UpdateStoragePool {
	return schemas.UpdateStoragePool{RequestID: "seed-pool-" + zone + "-primary", PoolID: "pool-" + zone + "-primary",
		ZoneID: zone, Name: "primary", Scope: schemas.PoolScopeZone, Path: filepath.Join(dir, zone+"-primary"),
		CapacityMB: primaryPoolMB, State: schemas.PoolUp}
}

// GuestNetwork is the default network seeded in the n-th zone (from 1):
// 10.<n>.0.0/16, gateway 10.<n>.0.1.
func GuestNetwork(zone string, n int) schemas.UpdateNetwork {
	return schemas.UpdateNetwork{RequestID: "seed-network-guest-" + zone, NetworkID: "guest-" + zone, ZoneID: zone,
		Name: "guest-" + zone, Cidr: fmt.Sprintf("10.%d.0.0/16", n), Gateway: fmt.Sprintf("10.%d.0.1", n), Default: true}
}

// seedStorage publishes the template and each zone's pool and default
// network the read model does not show, and makes the pools' directories.
// It runs once the projector has caught up with the admin key, so that a
// restarted stack sees what it seeded before; the request ids are fixed,
// so a request placement has answered already is not applied twice.
func (s *Stack) seedStorage(ctx context.Context, rm *readmodel.Reader, cl *kgo.Client) error {
	poolDir, err := filepath.Abs(filepath.Join(s.cfg.VarDir, "dev", "pools"))
	if err != nil {
		return fmt.Errorf("seed storage: %w", err)
	}
	now := time.Now().UnixMilli()
	var recs []schemas.Record
	if _, err := rm.Template(ctx, TinyLinux.ID); errors.Is(err, readmodel.ErrNotFound) {
		t := TinyLinux
		t.CreatedAt = now
		recs = append(recs, schemas.Record{Topic: schemas.TopicCatalog, Key: schemas.TemplateKey(t.ID), Value: &t})
	} else if err != nil {
		return fmt.Errorf("seed storage: %w", err)
	}
	for i, zone := range Zones {
		pool := PrimaryPool(zone, poolDir)
		if err := os.MkdirAll(pool.Path, 0o755); err != nil {
			return fmt.Errorf("seed storage: %w", err)
		}
		if p, err := rm.Pool(ctx, pool.PoolID); errors.Is(err, readmodel.ErrNotFound) || err == nil && !p.Applied {
			pool.At = now
			recs = append(recs, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: &pool})
		} else if err != nil {
			return fmt.Errorf("seed storage: %w", err)
		}
		network := GuestNetwork(zone, i+1)
		if n, err := rm.Network(ctx, zone, network.NetworkID); errors.Is(err, readmodel.ErrNotFound) || err == nil && !n.Applied {
			network.At = now
			recs = append(recs, schemas.Record{Topic: schemas.TopicPlacementRequests, Key: zone, Value: &network})
		} else if err != nil {
			return fmt.Errorf("seed storage: %w", err)
		}
	}
	if err := s.kcfg.Produce(ctx, cl, schemas.NewCodec(nil), recs...); err != nil {
		return fmt.Errorf("seed storage: %w", err)
	}
	// The first deploy of the template must find it. Pools and networks
	// are placement's to apply (or refuse: GET /v1/pools shows why).
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := rm.Template(ctx, TinyLinux.ID); err == nil {
			return nil
		} else if !errors.Is(err, readmodel.ErrNotFound) {
			return fmt.Errorf("seed storage: %w", err)
		}
		if time.Now().After(deadline) {
			return errors.New("seed: the template did not reach the read model in 30 s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
