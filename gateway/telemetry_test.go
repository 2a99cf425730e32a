package gateway

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/vmplane/vmplane/internal/telemetry"
	"github.com/vmplane/vmplane/readmodel"
)

// TestMethodLabel: a made-up method is one label, "other", not a series of
// its own.
func TestMethodLabel(t *testing.T) {
	for m, want := range map[string]string{"GET": "GET", "DELETE": "DELETE", "OPTIONS": "OPTIONS",
		"get": "other", "BREW": "other", "GET\x00": "other", "": "other"} {
		if got := methodLabel(m); got != want {
			t.Errorf("methodLabel(%q) = %q, want %q", m, got, want)
		}
	}
}

// inventoryOnce answers reads from a list, and ends the report loop after
// the last.
type inventoryOnce struct {
	reads  []readmodel.Inventory
	cancel context.CancelFunc
}

func (f *inventoryOnce) Inventory(context.Context) (readmodel.Inventory, error) {
	inv := f.reads[0]
	if len(f.reads) == 1 {
		f.cancel()
	} else {
		f.reads = f.reads[1:]
	}
	return inv, nil
}

// TestInventoryGauges: the gauges follow the read model, and a state no
// VM is in any more reads 0, not its last count.
func TestInventoryGauges(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	rm := &inventoryOnce{cancel: cancel, reads: []readmodel.Inventory{
		{VMsByState: map[string]int64{"Active": 3, "InvTestGone": 2}, HostsByStatus: map[string]int64{"Up": 2},
			Zones: []readmodel.ZoneFree{{ZoneID: "inv-zone", FreeCPU: 60, FreeMemoryMB: 1024}}},
		{VMsByState: map[string]int64{"Active": 4}, HostsByStatus: map[string]int64{"Up": 1, "Down": 1},
			Zones: []readmodel.ZoneFree{{ZoneID: "inv-zone", FreeCPU: 58, FreeMemoryMB: 512}}},
	}}
	ReportInventory(ctx, rm, time.Millisecond, slog.New(slog.DiscardHandler))
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{telemetry.VMs.With("Active").Value(), 4, "Active VMs"},
		{telemetry.VMs.With("InvTestGone").Value(), 0, "VMs of a state none is in any more"},
		{telemetry.Hosts.With("Down").Value(), 1, "hosts down"},
		{telemetry.ZoneFreeCPU.With("inv-zone").Value(), 58, "free vCPUs"},
		{telemetry.ZoneFreeMemory.With("inv-zone").Value(), 512 << 20, "free memory bytes"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if telemetry.InventoryReadSeconds.With().Value() < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Error("the read time was not set")
	}
}
