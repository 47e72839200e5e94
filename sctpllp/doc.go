// Package sctpllp is the SCTP adaptation of DDP (RFC 5043, with the
// enhanced session control of RFC 6581 §7): it turns one SCTP association
// into many DDP streams, one per SCTP stream pair, each an llp.Stream.
//
// Layout: the wire formats (segchunk.go: DDP Segment Chunk, PPID 16;
// control.go: DDP Stream Session Control, PPID 17, carrying the RFC 6581
// §9 IRD/ORD word of package iwarp), the adaptation written once above the Transport
// interface (assoc.go: Association; session.go: Session and Incoming;
// session_sm.go: the legal sequences of RFC 5043 §6; reorder.go: DDP-SSN
// re-sequencing; stream.go: per-stream quarantine and erroneous label), and
// the userspace backend on github.com/pion/sctp v1.12.1 (transport_pion.go,
// udpmux.go). The Linux kernel backend lives in transport_kernel*.go.
//
// Facts this package relies on, measured or read in pion v1.11.3 (the
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
//     kernel backend (ErrAdaptationMismatch; PionConfig.AllowMissingAdaptation
//     opts out).
//   - Memory per idle established session, measured with 1000 sessions
//     (BenchmarkIdleSessionMemory): about 6.4 KiB and one goroutine per
//     end, pion's Stream and the reader goroutine's stack included; no
//     receive buffer is held while idle.
package sctpllp
