// Package tracing holds the protocol events package sctp reports to a
// sctp.Config.Tracer, and package trace writes as JSON lines.
package tracing

import "time"

// Tracer receives an association's protocol events (sctp.Config.Tracer), for a
// trace such as package trace writes. It is called with the association's
// lock held: Event must return quickly and must not call the association.
// A nil Config.Tracer costs one nil check at each event point.
type Tracer interface {
	Event(e Event)
}

// EventKind names a traced event.
type EventKind uint8

// Traced events.
const (
	// EventSACK: a SACK (or a SHUTDOWN's Cumulative TSN Ack) was applied
	// (RFC 9260 §6.2.1, §7.2): the window after it, and whether it began a
	// Fast Retransmit (§7.2.4).
	EventSACK EventKind = iota + 1
	// EventT3Expiry: the T3-rtx timer expired (§6.3.3): cwnd fell to one
	// packet, the RTO doubled, Marked octets are to be retransmitted.
	EventT3Expiry
	// EventClosed: the association ended; Err is why (nil: graceful).
	EventClosed
)

var eventNames = [...]string{EventSACK: "sack", EventT3Expiry: "t3_expiry", EventClosed: "closed"}

// String names the event as a trace does.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "unknown"
}

// Event is one traced event with the association's congestion and timer
// state after it. It is passed by value and holds no reference into the
// association.
type Event struct {
	Kind EventKind
	Time time.Time
	// LocalTag and PeerTag are the association's Verification Tags: they
	// tell the associations of one Listener apart.
	LocalTag, PeerTag uint32
	// Cwnd, SSThresh and Flight are in octets (RFC 9260 §7.2); SRTT and
	// RTO as the estimator has them (§6.3.1).
	Cwnd, SSThresh, Flight int
	SRTT, RTO              time.Duration
	// CumTSN, Gaps, Dups and ARwnd are a SACK's fields (EventSACK), Acked
	// the octets it newly acknowledged, FastRetransmit whether it began a
	// Fast Retransmit; Marked the octets marked for retransmission (SACK
	// and T3 expiry).
	CumTSN         uint32
	Gaps, Dups     int
	ARwnd          uint32
	Acked, Marked  int
	FastRetransmit bool
	// Err is why the association ended (EventClosed).
	Err error
}
