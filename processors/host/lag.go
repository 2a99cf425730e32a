package host

import (
	"time"

	"github.com/vmplane/vmplane/schemas"
)

// A missed ping is a fact about the pings the processor has read, not about
// the pings the agents sent. Restored timers fire before a restarted
// processor has read anything: in `make bench` (benchmarks/hoststorm) a
// processor killed in the middle of a transaction could not fetch for about
// 5 s after it was ready, the broker holding the group's offsets until the
// dead transaction was gone, while the pings of those seconds waited in the
// topic and every host whose deadline fell then went Disconnected and was
// investigated (10,000 of 10,000 after an outage of a ping timeout). A
// processor reading a backlog is as blind to the pings behind it.
//
// So the machine keeps, from its inputs, whether it is current: not before
// it has stepped an input, and after each input, whether that input was
// read within TickSlack of being written (its Kafka timestamp). A missed
// ping found while it is not current opens the restart grace, once per
// silence, like a late Tick (pingTimeout).

// observe records how late the input in was read at now.
func (m *Machine) observe(in schemas.Record, now time.Time) {
	// An input without a timestamp says nothing of a backlog.
	m.current = in.TimestampMs == 0 || now.Sub(time.UnixMilli(in.TimestampMs)) <= m.cfg.TickSlack
}
