package backend

import (
	"net/netip"
	"time"
)

// Stats are the SCTP stack's own figures, where it reports them.
type Stats struct {
	// SRTT is the smoothed round-trip time of the primary path (RFC 9260
	// §6.3.1), valid when HasSRTT.
	SRTT    time.Duration
	HasSRTT bool
	// Retransmissions counts DATA chunks sent again (RFC 9260 §6.3.3,
	// §7.2.4), valid when HasRetransmissions. The kernel reports
	// SCTP_GET_ASSOC_STATS sas_rtxchunks; for pion, which keeps no such
	// counter, the pion backend counts the DATA chunks whose TSN is not above the
	// highest TSN pion sent before.
	Retransmissions    uint64
	HasRetransmissions bool
	// Paths are a multihomed association's destination addresses (RFC
	// 9260 §6.4), nil where the stack has one path or does not say.
	Paths []Path
}

// Path is one destination address of an association: its state
// ("active", "unconfirmed", "potentially-failed", "inactive"), whether it
// is the primary, its RTO figures (RFC 9260 §6.3), its congestion window
// (§7.2), the octets sent to it, its error counter (§8.2) and its PLPMTU
// (RFC 8899; 0 while not probed).
type Path struct {
	Addr       netip.AddrPort
	State      string
	Primary    bool
	SRTT, RTO  time.Duration
	Cwnd       int
	OctetsSent uint64
	Errors     int
	PLPMTU     int
}
