package sctp

import (
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
)

// traceEvent hands e, completed with the association's state, to the
// tracer. mu is held; the caller checked a.cfg.Tracer != nil.
func (a *Association) traceEvent(e tracing.Event, now time.Time) {
	e.Time, e.LocalTag, e.PeerTag = now, a.tcb.localTag, a.tcb.peerTag
	e.Cwnd, e.SSThresh, e.Flight = a.primaryPath().cc.Cwnd(), a.primaryPath().cc.SSThresh(), a.primaryPath().cc.Flight()
	e.SRTT, e.RTO = a.primaryPath().rto.SRTT(), a.primaryPath().rto.RTO()
	a.cfg.Tracer.Event(e)
}
