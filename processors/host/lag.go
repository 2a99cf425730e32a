package host

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// A missed ping is a fact about the pings the processor has read, not about
// the pings the agents sent. Restored timers fired before a restarted
// processor had read anything: in `make bench` (benchmarks/hoststorm) a
// processor killed in the middle of a transaction could not fetch for about
// 5 s after it was ready, the broker holding the group's offsets until the
// dead transaction was gone, while the pings of those seconds waited in the
// topic and every host whose deadline fell then went Disconnected and was
// investigated (10,000 of 10,000 after an outage of a ping timeout). The
// engine now holds a restored partition's timers until its inputs are read
// to where they stood at the assignment, which covers that case, but not
// two others: a processor reading a backlog on partitions it has held all
// along, or one written after the assignment, is as blind to the pings
// behind it (testdata/behind_unread.txt); and after a restart with nothing
// to read, because nothing could be written (the broker was down, the
// agents reconnect), a Tick before the first input proves nothing
// (restart_silent.txt).
//
// So the machine keeps, from its inputs, whether it is current: not before
// it has stepped an input, and after each input, whether the newest input
// it has read (by Kafka timestamp) was written within TickSlack of now. A
// missed ping found while it is not current opens the restart grace, once
// per silence, like a late Tick (pingTimeout). The newest, not the last:
// one agent whose clock runs behind (or that flushes pings it buffered
// through an outage) makes its own records look late, and must not make a
// dead host of another agent wait out the grace; a backlog makes every
// record look late. It is judged at each input, never at a Tick: a
// silence of every agent (a whole site down) is a silence, not a backlog.

// observe records how late the newest input read by now is.
func (m *Machine) observe(in schemas.Record, now time.Time) {
	// An input without a timestamp says nothing of a backlog.
	if in.TimestampMs == 0 {
		m.current = true
		return
	}
	m.newest = max(m.newest, in.TimestampMs)
	m.current = now.Sub(time.UnixMilli(m.newest)) <= m.cfg.TickSlack
}
