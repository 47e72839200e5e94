// Package pion is the sctpllp backend on github.com/pion/sctp over UDP
// (RFC 6951 encapsulation): a backend.Transport per association, a
// listener that demultiplexes one UDP socket by peer address (udpmux.go)
// and answers INITs statelessly (pion_handshake.go, with sctp.Responder),
// the Adaptation Layer Indication pion lacks (pion_ali.go), dead-peer
// HEARTBEATs (deadpeer_pion.go) and optional PLPMTUD (pmtu_pion.go).
//
// Facts this backend relies on, measured or read in pion v1.11.3 (the
// tests that pin them pass on v1.12.1):
//
//   - pion's WithMTU is the SCTP packet size (common header and chunks),
//     not the IP MTU: a user message above floor4(MTU − 12 − 16) is split
//     into several DATA chunks (maxPayloadSizeForMTU, I-DATA disabled).
//     MaxMessage is computed from that, with the path MTU less the IP
//     (20/40) and UDP (8) headers as pion's packet size, at most 8192.
//   - MULPDU = MaxMessage − 2 (DDP-SSN) − 32 (BundlingReserve: a 16-octet
//     SACK with four Gap Ack Blocks), never below 516 (RFC 5043 §9). For a
//     1500-octet IPv4 path that is 1410; on loopback (8192-octet packets)
//     8130.
//   - pion has no API for the Adaptation Layer Indication (RFC 5043 §5.1,
//     RFC 5061 §4.2.6): the backend adds it to the INIT and INIT ACK pion
//     writes and reads the peer's from the INIT or INIT ACK pion reads, at
//     the conn layer (pion_ali.go). It is required by default, as in the
//     kernel backend (backend.ErrAdaptationMismatch;
//     Config.AllowMissingAdaptation opts out).
//   - A stream that receives has a reader goroutine (pion offers only a
//     blocking read); it ends after 100 ms without a message, and the
//     stream's next DATA chunk or RE-CONFIG reset, seen in the packets
//     below pion, starts another (reader.go). An idle stream holds no
//     goroutine and no receive buffer, only pion's Stream (about 1.5 KiB
//     per end) and the backend's record (0.7 KiB); the harness's row of
//     memory per idle stream, both ends with the RDMA layers: 10.4 KiB
//     (14.5 with a reader per stream, 2026-11-28).
//   - pion computes the receive window it advertises by summing the
//     reassembly queues of every stream it holds, for each DATA chunk it
//     receives (Association.getMyReceiverWindowCredit): the work per
//     packet grows with the streams an association has used. Opening
//     10,000 streams on one association (TestTenThousandStreams in
//     package transport) took 28 s over this backend against 1 s over
//     sctp-native, 87% of the CPU in that sum (CPU profile, 2026-11-28);
//     at 256 streams it does not show (docs/benchmarks.md). Streams are
//     capped at Config.Streams (DefaultStreams, 4,096, unless
//     transport.Options.Streams asks for more).
package pion
