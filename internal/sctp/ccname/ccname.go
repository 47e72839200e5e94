// Package ccname names the congestion controls and slow starts of
// package sctp's Config.CongestionControl and Config.SlowStart, for the
// module's engines and flags; a user writes the strings.
package ccname

// Congestion controls of sctp.Config.CongestionControl.
const (
	// CongestionRFC9260 is RFC 9260 §7.2: slow start, congestion
	// avoidance by one PMDCS per window (Reno's), ssthresh cwnd/2 on
	// loss.
	CongestionRFC9260 = "rfc9260"
	// CongestionCUBIC keeps RFC 9260's slow start, Fast Recovery and
	// T3-rtx rules and grows and reduces the window as CUBIC (RFC 9438)
	// does: the window of TCP in Linux, Windows and Apple systems, so
	// that an association and a TCP flow share a bottleneck fairly.
	CongestionCUBIC = "cubic"
)

// Slow starts of sctp.Config.SlowStart.
const (
	// SlowStartRFC9260 is RFC 9260 §7.2.1: slow start until cwnd
	// exceeds ssthresh or a loss.
	SlowStartRFC9260 = "rfc9260"
	// SlowStartHyStart runs the initial slow start with HyStart++ (RFC
	// 9406): it ends when the round trip grows, before the bottleneck's
	// queue overflows; later slow starts are RFC 9260's.
	SlowStartHyStart = "hystart++"
)
