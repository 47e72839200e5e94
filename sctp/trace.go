package sctp

import (
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
)

// traceEvent hands e, completed with the association's state, to the
// tracer. mu is held; the caller checked a.cfg.Tracer != nil.
func (a *Association) traceEvent(e tracing.Event, now time.Time) {
	dst := a.primaryPath()
	e.Time, e.LocalTag, e.PeerTag = now, a.tcb.localTag, a.tcb.peerTag
	e.Cwnd, e.SSThresh, e.Flight = dst.cc.Cwnd(), dst.cc.SSThresh(), dst.cc.Flight()
	e.SRTT, e.RTO = dst.rto.SRTT(), dst.rto.RTO()
	a.cfg.Tracer.Event(e)
}
