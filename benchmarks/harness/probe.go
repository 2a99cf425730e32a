package harness

import (
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Probe is what one machine does at the two costs that move the scenarios'
// figures from one day's box to the next while compute stays the same:
// handing a process fresh memory, and a round trip over loopback TCP. On
// the same model of box, 2 cores and 24 GiB, a run on a day when the first
// touch of fresh memory cost 3.3 s per GiB measured the storm at a third
// of an earlier day's rate, and clickhouse-client's INSERT (a limit, none
// of our code) at 114k rows/s against 374k. The probe is taken once, before
// the scenarios, so that history rows say which kind of day they had.
type Probe struct {
	// FreshMemoryMiBps is the rate of writing one byte to each 4 KiB page
	// of newly mapped anonymous memory (ProbeMemoryMiB of it): page faults
	// and zeroing, as a growing heap, a new Postgres backend or a
	// ClickHouse insert pays for.
	FreshMemoryMiBps float64 `json:"fresh_memory_mib_per_s"`
	// LoopbackRoundTripMicros is the mean round trip of an 8-byte
	// message between two goroutines over a loopback TCP connection
	// (ProbeRoundTrips of them): two syscalls and a wake-up each way, as
	// every Kafka and Postgres request pays for.
	LoopbackRoundTripMicros float64 `json:"loopback_round_trip_us"`
}

// Sizes of the probe: about a second on a slow day.
const (
	ProbeMemoryMiB  = 256
	ProbeRoundTrips = 20_000
)

// ProbeMachine measures the Probe.
func ProbeMachine() (Probe, error) {
	var p Probe
	mibps, err := freshMemory(ProbeMemoryMiB)
	if err != nil {
		return p, err
	}
	rtt, err := loopbackRoundTrip(ProbeRoundTrips)
	if err != nil {
		return p, err
	}
	p.FreshMemoryMiBps = mibps
	p.LoopbackRoundTripMicros = float64(rtt) / float64(time.Microsecond)
	return p, nil
}

// String is the probe as the machine line prints it.
func (p Probe) String() string {
	if p.FreshMemoryMiBps == 0 {
		return "not probed"
	}
	return fmt.Sprintf("fresh memory %.0f MiB/s, loopback round trip %.1f µs", p.FreshMemoryMiBps, p.LoopbackRoundTripMicros)
}

// freshMemory maps mib MiB of anonymous memory, touches each page once
// and returns MiB/s. The mapping is its own, outside the Go heap, so the
// pages are new to the process whatever the heap holds.
func freshMemory(mib int) (float64, error) {
	const page = 4096
	start := time.Now()
	b, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return 0, fmt.Errorf("probe fresh memory: %w", err)
	}
	for i := 0; i < len(b); i += page {
		b[i] = 1
	}
	took := time.Since(start)
	if err := syscall.Munmap(b); err != nil {
		return 0, fmt.Errorf("probe fresh memory: %w", err)
	}
	return float64(mib) / took.Seconds(), nil
}

// loopbackRoundTrip returns the mean of n round trips of 8 bytes between
// two goroutines over a loopback TCP connection.
func loopbackRoundTrip(n int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("probe loopback: %w", err)
	}
	defer ln.Close()
	echoed := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			echoed <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(c, c)
		echoed <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("probe loopback: %w", err)
	}
	msg := make([]byte, 8)
	start := time.Now()
	for range n {
		if _, err := c.Write(msg); err != nil {
			c.Close()
			return 0, fmt.Errorf("probe loopback: %w", err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			c.Close()
			return 0, fmt.Errorf("probe loopback: %w", err)
		}
	}
	took := time.Since(start)
	c.Close()
	if err := <-echoed; err != nil {
		return 0, fmt.Errorf("probe loopback echo: %w", err)
	}
	return took / time.Duration(n), nil
}
