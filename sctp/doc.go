// Package sctp holds the building blocks of the project's own userspace
// SCTP stack (RFC 9260), run over UDP (RFC 6951 encapsulation) as a lower
// layer for DDP (RFC 5043).
//
// The stack is layered:
//
//   - internal/sctp/wire encodes and decodes packets, chunks and parameters.
//   - This package holds the protocol logic that needs no I/O: each piece
//     is a small type with no goroutines and no allocation in the steady
//     state, driven by the caller with explicit times.
//   - The association (Association, Dial, Listener) is built on these
//     pieces and runs over UDP: a writer sends from its own goroutine
//     under the association's lock, the goroutine reading the socket
//     processes each packet under it and hands received messages to a
//     delivery goroutine, and one OS timer (Wakeup) drives every protocol
//     timer.
//
// The pieces, and the parts of RFC 9260 each implements:
//
//   - serial.go: serial-number comparison of TSNs and SSNs (§1.6, with
//     RFC 1982).
//   - rto.go: rtoEstimator, the retransmission timeout: SRTT, RTTVAR and
//     RTO (§6.3.1 rules C1-C7 and G1), back-off on expiry (§6.3.3 E2), and
//     the RTO.Initial/Min/Max parameters (§16), configurable.
//   - congestion.go: Congestion, cwnd/ssthresh/partial_bytes_acked with
//     slow start, congestion avoidance, the T3-rtx and Fast Recovery
//     reductions and the idle decay (§7.2.1-§7.2.4, §6.3.3 E1), the flight
//     size and the peer's receive window with the zero window probe
//     (§6.1 rules A-C, §6.2.1).
//   - outstanding.go: outstandingQueue, the sender's DATA chunks in flight:
//     SACK processing with Cumulative TSN Ack and Gap Ack Blocks
//     (§6.2.1 D), reneging, miss indications and Fast Retransmit (§7.2.4),
//     marking for retransmission on T3-rtx expiry (§6.3.3 E3), and RTT
//     samples under Karn's rule (§6.3.1 C4, C5).
//   - tsntracker.go: recvTracker, the receiver's view of the peer's TSNs:
//     the Cumulative TSN Ack point, Gap Ack Blocks and Duplicate TSNs for
//     the SACK (§3.3.4, §6.2, §6.7) in a bounded window, and when to send
//     the SACK (§6.2 delayed acknowledgement, §5.1 first DATA).
//   - reassembly.go: Reassembler, the receiver's user messages: fragments
//     put together from their B and E bits (§6.9), unordered messages
//     delivered when complete (§6.6) and ordered ones in SSN order per
//     stream (§6.5), in constant work per chunk, with caps on fragments
//     per message and held (§6.9) and the zero-window eviction of §6.2.
//   - memory.go: the association's share of the process-wide budget of
//     received data (internal/membudget), charged by the buffers held;
//     a_rwnd is what is left of it.
//   - cookie.go: CookieSigner and Cookie, the stateless State Cookie
//     (§5.1.3, §5.1.5) with the Tie-Tags of §5.2.2/§5.2.4, signed with
//     HMAC-SHA256 under rotating secrets.
//   - timers.go: Timers and Wakeup, the deadlines of an association's
//     timers (T1-init, T1-cookie, T2-shutdown, T3-rtx, T5-shutdown-guard,
//     heartbeat, delayed SACK, RE-CONFIG) behind one OS timer
//     (§4, §5.1, §6.2, §6.3.2, §8.3, §9.2; RFC 6525).
//   - responder.go: Responder, the stateless passive side of an
//     association start: INIT answered with a signed State Cookie,
//     COOKIE ECHO verified, out-of-the-blue packets answered (§5.1.3,
//     §5.1.5, §8.4), rate-limited; shared with sctpllp's pion backend.
//
// The association, one file per concern:
//
//   - assoc_config.go: Config, the errors, State (§4).
//   - assoc.go: Association, its lifetime (Close §9.2, Abort §9.1),
//     counters.
//   - assoc_handshake.go: the active side's INIT and COOKIE ECHO (§5.1),
//     INIT collision (§5.2.1), an unexpected INIT answered with Tie-Tags
//     and the association left alone (§5.2.2), COOKIE ECHO on an
//     existing association (§5.2.4: case D answered, case A, a restarted
//     peer, ends it with ErrPeerRestarted and a listener accepts the new
//     one from the same COOKIE ECHO, case B while starting takes the
//     peer's new tag), Stale Cookie (§5.2.6).
//   - assoc_statetable.go: the chunk × state table that dispatches every
//     received chunk to a handler named by its section (RFC 9260 §4).
//   - assoc_tx.go: WriteMsg, fragmentation (§6.9), transmission within
//     cwnd, rwnd and Max.Burst with retransmissions first (§6.1), cwnd
//     after idle (§7.2.1), SACK bundling (§6.2).
//   - assoc_rx.go: the received packet (CRC, Verification Tag with its
//     §8.5.1 exceptions, a bundled INIT) and chunks: DATA (§6.2, §6.5),
//     SACK (§6.2.1, §6.3.2, §7.2.4), HEARTBEAT (§8.3), SHUTDOWN (§9.2),
//     ERROR, RE-CONFIG (RFC 6525 §5.2), unknown chunk types (§3.2).
//   - assoc_timers.go: T1, T2, T3-rtx (§6.3.3), T5, HEARTBEAT and the
//     error counter (§8.1, §8.3).
//   - deliver.go: the delivery queue, bounded and charged to a_rwnd.
//   - endpoint.go: Dial (a connected UDP socket per association; ICMP
//     port unreachable, RFC 6951 §5.5) and Listener (one socket, the
//     Responder, caps per listener and per peer address).
//   - bufpool.go: the pooled buffers of the data path.
package sctp
