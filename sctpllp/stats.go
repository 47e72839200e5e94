package sctpllp

import (
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
)

// numFunctionCodes sizes the per-function-code counters: index them with
// a functionCode (1-7, RFC 5043 §5.2.3, RFC 6581 §7).
const numFunctionCodes = 8

// ControlCounts count DDP Stream Session Control messages (PPID 17) by
// function code: RFC 5043 §5.2.3's four and RFC 6581 §7's enhanced forms.
type ControlCounts struct {
	Initiate, Accept, Reject, Terminate              uint64
	EnhancedInitiate, EnhancedAccept, EnhancedReject uint64
}

// controlCounts reads the per-function-code counters c.
func controlCounts(c *[numFunctionCodes]atomic.Uint64) ControlCounts {
	return ControlCounts{
		Initiate: c[funcInitiate].Load(), Accept: c[funcAccept].Load(),
		Reject: c[funcReject].Load(), Terminate: c[funcTerminate].Load(),
		EnhancedInitiate: c[funcEnhancedInitiate].Load(),
		EnhancedAccept:   c[funcEnhancedAccept].Load(),
		EnhancedReject:   c[funcEnhancedReject].Load(),
	}
}

// add adds o to c.
func (c *ControlCounts) add(o ControlCounts) {
	c.Initiate += o.Initiate
	c.Accept += o.Accept
	c.Reject += o.Reject
	c.Terminate += o.Terminate
	c.EnhancedInitiate += o.EnhancedInitiate
	c.EnhancedAccept += o.EnhancedAccept
	c.EnhancedReject += o.EnhancedReject
}

// AssocStats are an association's counters since it was created, kept
// with atomic additions (no lock, no allocation on the data path).
type AssocStats struct {
	// ControlSent and ControlReceived count the DDP Stream Session Control
	// messages (PPID 17) by function code.
	ControlSent, ControlReceived ControlCounts
	// ErroneousStreams counts the streams labelled erroneous with
	// MarkErroneous (RFC 5040 §7: the stream's RDMAP Stream failed; its
	// identifier is never used again on this association).
	ErroneousStreams uint64
	// DroppedChunks counts chunks dropped because their stream carries no
	// session (Association.droppedChunks).
	DroppedChunks uint64
	// HeldBytes is the memory charged now for what the peer made this
	// side hold (early chunks, segments before Start, as held: size
	// classes and bookkeeping), out of Config.MaxHeldAssocBytes;
	// GapTimeouts counts the streams ended because a DDP-SSN stayed
	// missing for Config.MaxGapTime; ShareAborts is 1 when the
	// association was aborted for its memory share (errMemoryShare).
	HeldBytes   int64
	GapTimeouts uint64
	ShareAborts uint64
	// IdleClosed is 1 when the association was aborted for having no
	// session for Config.IdleTimeout (a sum counts such associations).
	IdleClosed uint64
	// Transport is what the SCTP stack reports.
	Transport backend.Stats
}

// assocCounters are the atomics behind AssocStats.
type assocCounters struct {
	ctlSent, ctlRecv [numFunctionCodes]atomic.Uint64
	erroneous        atomic.Uint64
	gapTimeouts      atomic.Uint64
	idleClosed       atomic.Uint64
	shareAborts      atomic.Uint64
}

func (c *assocCounters) control(sent bool, f functionCode) {
	if f >= numFunctionCodes {
		return
	}
	if sent {
		c.ctlSent[f].Add(1)
	} else {
		c.ctlRecv[f].Add(1)
	}
}

// Stats returns the association's counters.
func (a *Association) Stats() AssocStats {
	var s AssocStats
	s.ControlSent = controlCounts(&a.ctr.ctlSent)
	s.ControlReceived = controlCounts(&a.ctr.ctlRecv)
	s.ErroneousStreams = a.ctr.erroneous.Load()
	s.DroppedChunks = a.dropped.Load()
	s.HeldBytes, s.GapTimeouts = a.held.HeldNow(), a.ctr.gapTimeouts.Load()
	s.ShareAborts = a.ctr.shareAborts.Load()
	s.IdleClosed = a.ctr.idleClosed.Load()
	if ts, ok := a.t.(contract.StatsReporter); ok {
		s.Transport = ts.TransportStats()
	}
	return s
}

// Add adds o's counters to s; a server sums the associations that ended
// with it. SRTT is not a sum: s keeps its own, or takes o's if it has none.
func (s *AssocStats) Add(o AssocStats) {
	s.ControlSent.add(o.ControlSent)
	s.ControlReceived.add(o.ControlReceived)
	s.ErroneousStreams += o.ErroneousStreams
	s.DroppedChunks += o.DroppedChunks
	s.HeldBytes += o.HeldBytes
	s.GapTimeouts += o.GapTimeouts
	s.ShareAborts += o.ShareAborts
	s.IdleClosed += o.IdleClosed
	s.Transport.Retransmissions += o.Transport.Retransmissions
	s.Transport.HasRetransmissions = s.Transport.HasRetransmissions || o.Transport.HasRetransmissions
	if !s.Transport.HasSRTT && o.Transport.HasSRTT {
		s.Transport.SRTT, s.Transport.HasSRTT = o.Transport.SRTT, true
	}
}
