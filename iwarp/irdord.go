package iwarp

import "fmt"

// NoNegotiation (0x3FFF, all ones) in IRD or ORD means that automatic
// negotiation of that value is not desired (RFC 6581 §9.1).
const NoNegotiation = 0x3FFF

// maxIRDORD is the largest IRD or ORD the 14-bit fields can carry; it is
// NoNegotiation.
const maxIRDORD = NoNegotiation

// IRD/ORD defaults and limits of every LLP's connection manager and of
// rdmap.EndpointConfig (RFC 6581 §9.1).
const (
	// DefaultIRD is the IRD an endpoint offers when its config leaves it 0,
	// and the CLI's --ird: 128, as perftest's ib_read_bw keeps its
	// device's maximum outstanding (siw's is 128) against a server that
	// offers as many; the queues behind it take memory on first use only.
	DefaultIRD = 128
	// DefaultORD is the ORD an endpoint asks for when its config leaves it
	// 0, and the CLI's --ord: DefaultIRD, so that two default ends meet.
	DefaultORD = DefaultIRD
	// MaxIRD is the largest IRD or ORD that can be negotiated: the 14-bit
	// field's all-ones value is NoNegotiation. Larger requests are clamped
	// to it.
	MaxIRD = NoNegotiation - 1
	// DefaultMaxIRD is how far a responder raises its IRD by default to
	// meet the initiator ORD (RFC 6581 §9.1: "the responder IRD MAY be
	// increased").
	DefaultMaxIRD = 128
)

// RTR is a set of Ready-to-Receive indication options, Control Flags B, C
// and D of RFC 6581 §9.2. The RTR itself is an ordinary zero-length RDMAP
// message (a Send, an RDMA Write or an RDMA Read) that the connection
// Initiator sends first in the peer-to-peer model (RFC 6581 §5, §9.3); the
// connection establishment only negotiates which one.
type RTR uint8

// RTR indication options (RFC 6581 §9.2).
const (
	// RTRSend (Control Flag B): a zero-length FULPDU (Send).
	RTRSend RTR = 1 << iota
	// RTRWrite (Control Flag C): a zero-length RDMA Write.
	RTRWrite
	// RTRRead (Control Flag D): a zero-length RDMA Read.
	RTRRead

	// RTRAll is every RTR indication option.
	RTRAll = RTRSend | RTRWrite | RTRRead
)

// String lists the options, e.g. "write|read", or "none".
func (r RTR) String() string {
	if r == 0 {
		return "none"
	}
	s := ""
	for _, o := range [...]struct {
		f RTR
		n string
	}{{RTRSend, "send"}, {RTRWrite, "write"}, {RTRRead, "read"}} {
		if r&o.f != 0 {
			if s != "" {
				s += "|"
			}
			s += o.n
		}
	}
	if rest := r &^ RTRAll; rest != 0 {
		if s != "" {
			s += "|"
		}
		s += fmt.Sprintf("%#x", uint8(rest))
	}
	return s
}

// IRDORD is the enhanced RDMA connection establishment data of RFC 6581 §9:
// the first 32 bits of the private data of an enhanced MPA Request or Reply
// (S = 1) and of the enhanced DDP Stream Session Initiate, Accept and Reject
// session control messages over SCTP (RFC 6581 §9: "the MPA Request and
// Reply Frames or the DDP Stream Session Initiate and DDP Stream Session
// Accept SCTP Session Control Chunks"), in network byte order, as drawn
// at the top of the struct.
type IRDORD struct {
	//	 0                   1                   2                   3
	//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|A|B|        IRD                |C|D|        ORD                |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//
	// Flags B, C and D belong to the peer-to-peer model of flag A: "If Control
	// Flag A is set to 0, then Control Flags B, C, and D MUST also be set to 0.
	// On reception, if Control Flag A is set to 0, then Control Flags B, C, and
	// D MUST be ignored" (§9.2). Append therefore sends them as 0 and
	// ParseIRDORD reports an empty RTR set unless PeerToPeer; a word with A = 0
	// and B, C or D set is accepted, not rejected.

	// PeerToPeer is Control Flag A: the peer-to-peer connection model
	// (RFC 6581 §9.2).
	PeerToPeer bool
	// RTR holds Control Flags B, C and D, meaningful only with PeerToPeer.
	RTR RTR
	// IRD is the Inbound RDMA Read Queue Depth, 14 bits (NoNegotiation:
	// not negotiated).
	IRD uint16
	// ORD is the Outbound RDMA Read Queue Depth, 14 bits.
	ORD uint16
}

// Validate reports ErrInvalidIRDORD if IRD or ORD exceeds 14 bits.
func (w IRDORD) Validate() error {
	if w.IRD > maxIRDORD || w.ORD > maxIRDORD {
		return fmt.Errorf("%w: IRD %d ORD %d", ErrInvalidIRDORD, w.IRD, w.ORD)
	}
	return nil
}

// String formats the word as it reads in a trace, e.g.
// "IRD 16 ORD 16 p2p rtr=write".
func (w IRDORD) String() string {
	s := fmt.Sprintf("IRD %d ORD %d", w.IRD, w.ORD)
	if w.PeerToPeer {
		s += " p2p rtr=" + w.RTR.String()
	}
	return s
}

// Depths is an endpoint's RDMA Read queue depths: IRD, the inbound RDMA
// Read Request queue depth, and ORD, the outbound RDMA Read limit
// (RFC 6581 §9.1). NoNegotiation in either means "not negotiated, the ULP
// sets it".
type Depths struct {
	IRD, ORD int
}
