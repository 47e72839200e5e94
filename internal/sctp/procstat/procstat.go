// Package procstat holds the process-wide figures of package sctp: the
// budget of received data over every association, and the counters of
// every Listener together. The module's metrics read them.
package procstat

import (
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
)

// MemoryStats is the process-wide budget of received data that peers make
// this process hold (reassembly, receive queues), over every association
// of the process: each association is charged by the buffers it holds,
// within its share (sctp.Config.ReceiveBuffer).
type MemoryStats struct {
	// Limit is the budget in octets; Used the octets charged now; Peak
	// the most charged at once.
	Limit, Used, Peak int64
	// Refused counts the charges refused because the budget, or an
	// association's share, was full (the DATA was dropped, RFC 9260
	// §6.2, or the association aborted).
	Refused uint64
	// Reclaims counts the associations aborted with sctp.ErrProcessMemory.
	Reclaims uint64
}

// SetMemoryLimit sets the process-wide budget of received data in octets
// (<= 0: the default, 512 MiB). Octets already held stay charged.
func SetMemoryLimit(limit int64) { membudget.Process.SetLimit(limit) }

// Memory returns the process-wide budget's figures.
func Memory() MemoryStats {
	p := membudget.Process
	return MemoryStats{Limit: p.Limit(), Used: p.Used(), Peak: p.Peak(), Refused: p.Refused(), Reclaims: p.Reclaims()}
}

// ListenerStats are a listener's counters of its associations
// (sctp.Listener.Stats), or every listener's together (ListenerTotals).
type ListenerStats struct {
	// Associations is the number held now.
	Associations int
	// QueueDrops counts packets of known associations dropped because the
	// association's receive queue, or all queues together, were full.
	QueueDrops uint64
	// Evicted counts associations aborted to make room for a new peer
	// when the table was full; Stalled those aborted by the reaper for
	// making no progress for Config.StallTimeout.
	Evicted, Stalled uint64
	// Rebinds counts changes of a peer's UDP port taken from a packet
	// with the association's Verification Tag (RFC 6951 §5.4).
	Rebinds uint64
	// Unbound counts packets a multihomed listener's wildcard socket
	// received at a local address it was not given, dropped (RFC 9260
	// §1.5.1: not this endpoint's).
	Unbound uint64
}

// ListenerCounters are the counters of ListenerStats as package sctp
// counts them.
type ListenerCounters struct {
	QueueDrops, Evicted, Stalled, Rebinds, Unbound atomic.Uint64
	Associations                                   atomic.Int64 // Listeners only
}

// Listeners sums the counters of every Listener of the process.
var Listeners ListenerCounters

// ListenerTotals returns the counters of every Listener of the process
// together, closed ones included (Associations: those held now), as
// Memory does for the memory budget.
func ListenerTotals() ListenerStats {
	s := &Listeners
	return ListenerStats{Associations: int(s.Associations.Load()), QueueDrops: s.QueueDrops.Load(),
		Evicted: s.Evicted.Load(), Stalled: s.Stalled.Load(), Rebinds: s.Rebinds.Load(), Unbound: s.Unbound.Load()}
}
