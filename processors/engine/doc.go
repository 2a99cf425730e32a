// Package engine drives a pure state machine exactly once over Kafka:
// consume its input topics, Step each record against the state of its key,
// and produce the outputs, the changed state (to a compacted changelog) and
// the consumed offsets in one Kafka transaction. It owns the poll loop and
// its phases (loop.go), the states of the partitions the group assigns and
// their restore from the changelog (state.go, restore.go, and parts.go for
// a state written in parts, too large to rewrite per transaction), the
// timers kept in state, fired from an injected clock (timers.go) and held
// for a restored partition until its inputs are read to where they stood
// (hold.go), and the dead letters of records that do not decode; what it
// shows of itself goes through Hooks.
//
// engine never decides: it knows nothing about VMs, hosts or zones, and the
// deciding lives in the machines (processors/vm, host, placement, lease),
// which never import it. Nor does it tune the process it runs in: the
// collector's settings are internal/memory's.
package engine
