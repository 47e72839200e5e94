// Package sctp holds the building blocks of the project's own userspace
// SCTP stack (RFC 9260), run over UDP (RFC 6951 encapsulation) as a lower
// layer for DDP (RFC 5043).
//
// The stack is layered:
//
//   - sctp/wire encodes and decodes packets, chunks and parameters.
//   - This package holds the protocol logic that needs no I/O: each piece
//     is a small type with no goroutines and no allocation in the steady
//     state, driven by the caller with explicit times.
//   - The association and socket layers are built on these pieces: one
//     event loop per association feeds them received chunks and timer
//     expiries and sends what they decide, over a UDP socket.
//
// The pieces, and the parts of RFC 9260 each implements:
//
//   - serial.go: serial-number comparison of TSNs and SSNs (§1.6, with
//     RFC 1982).
//   - rto.go: RTOEstimator, the retransmission timeout: SRTT, RTTVAR and
//     RTO (§6.3.1 rules C1-C7 and G1), back-off on expiry (§6.3.3 E2), and
//     the RTO.Initial/Min/Max parameters (§16), configurable.
//   - congestion.go: Congestion, cwnd/ssthresh/partial_bytes_acked with
//     slow start, congestion avoidance, the T3-rtx and Fast Recovery
//     reductions and the idle decay (§7.2.1-§7.2.4, §6.3.3 E1), the flight
//     size and the peer's receive window with the zero window probe
//     (§6.1 rules A-C, §6.2.1).
//   - outstanding.go: OutstandingQueue, the sender's DATA chunks in flight:
//     SACK processing with Cumulative TSN Ack and Gap Ack Blocks
//     (§6.2.1 D), reneging, miss indications and Fast Retransmit (§7.2.4),
//     marking for retransmission on T3-rtx expiry (§6.3.3 E3), and RTT
//     samples under Karn's rule (§6.3.1 C4, C5).
//   - tsntracker.go: RecvTracker, the receiver's view of the peer's TSNs:
//     the Cumulative TSN Ack point, Gap Ack Blocks and Duplicate TSNs for
//     the SACK (§3.3.4, §6.2, §6.7) in a bounded window, and when to send
//     the SACK (§6.2 delayed acknowledgement, §5.1 first DATA).
//   - reassembly.go: Reassembler, the receiver's user messages: fragments
//     put together from their B and E bits (§6.9), unordered messages
//     delivered when complete (§6.6) and ordered ones in SSN order per
//     stream (§6.5), within a byte budget that gives the a_rwnd, with the
//     zero-window eviction of §6.2.
//   - cookie.go: CookieSigner and Cookie, the stateless State Cookie
//     (§5.1.3, §5.1.5) with the Tie-Tags of §5.2.2/§5.2.4, signed with
//     HMAC-SHA256 under rotating secrets.
//   - timers.go: Timers and Wakeup, the deadlines of an association's
//     timers (T1-init, T1-cookie, T2-shutdown, T3-rtx, T5-shutdown-guard,
//     heartbeat, delayed SACK, RE-CONFIG) behind one OS timer
//     (§4, §5.1, §6.2, §6.3.2, §8.3, §9.2; RFC 6525).
package sctp
