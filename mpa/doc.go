// Package mpa implements Marker PDU Aligned Framing for TCP, the iWARP
// lower layer protocol of RFC 5044, with the enhanced RDMA connection
// establishment of RFC 6581, as an llp.Stream for the DDP layer (RFC 5041):
// Client and Server negotiate on a net.Conn and return a Conn.
package mpa

// # Wire formats
//
// One file per wire message, each with a Parse function returning (value,
// octets consumed, error), an Append that allocates nothing when the
// buffer has room, and Len:
//
//   - crc.go: the CRC32c of RFC 3720 §12.1 and its least-significant-octet
//     first placement in the FPDU (RFC 5044 §4.4).
//   - reqrep.go: the MPA Request and Reply Frames (RFC 5044 §7.1.1,
//     RFC 6581 §6).
//   - fpdu.go: the FPDU (RFC 5044 §4.1, §4.4, §4.5).
//   - marker.go: Markers, their insertion and removal (RFC 5044 §4.2, §4.3).
//
// The enhanced connection establishment data (the RFC 6581 §9 IRD/ORD word
// and RTR options), its negotiation rules (§9.1, §9.2), the MPA Terminate
// codes (RFC 5044 §8, RFC 6581 §8) and the one RDMAP Terminate this
// package sends itself, when the Initiator cannot honour an enhanced Reply,
// are shared with the SCTP adaptation and live in package iwarp.
//
// Errors a peer causes are *llp.Error values with the Terminate error type
// and code of RFC 5044 §8 and RFC 6581 §8 (layer 2, type 0); test their
// causes with errors.Is (ErrCRC, ErrMarker, ErrBadKey, ...).
//
// # Connections
//
// Dial or Client run the Initiator side of the startup phase, Listen and
// Listener.Accept or Server the Responder side (RFC 5044 §7.1). The result
// is a *Conn in Full Operation Phase: SendSegment frames each DDP segment
// as one FPDU (pad, CRC32c, Markers where the peer asked for them) and
// writes it with one system call; Start delivers received ULPDUs in order
// after checking CRC and Markers; MULPDU follows the TCP MSS (RFC 5044
// §4.5). Params reports what was negotiated, including the IRD/ORD values
// and the RTR indication of RFC 6581, whose RTR message the RDMAP layer
// sends. Markers are negotiated per direction: an end inserts them when
// the peer's frame had M. CRCs are used in both directions when either
// frame had C. An Initiator that cannot honour an enhanced Reply (the
// Responder ORD exceeds its IRD, or no RTR option or connection model
// matches) sends the Terminate RFC 6581 §9 prescribes as its first FPDU,
// closes the connection and returns a *NegotiationError.
//
// The receive goroutine of a plain TCP connection that has had nothing to
// read for Config.ReaderIdle (100 ms) at an FPDU boundary parks: it gives
// back its buffer and ends, and one epoll instance of the process starts
// it again when the socket is readable (park.go, park_linux.go), so that
// an idle stream holds no goroutine and no receive buffer.
