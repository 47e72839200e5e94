package iwarp

import (
	"encoding/binary"
	"fmt"
)

// IRDORDLen is the length of the enhanced RDMA connection establishment
// data (RFC 6581 §9).
const IRDORDLen = 4

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

// Has reports whether every option in o is in r.
func (r RTR) has(o RTR) bool { return r&o == o }

// Pick returns the single option the Initiator sends out of r: a
// zero-length RDMA Write (what Linux siw sends by default), else a
// zero-length Read, else a Send. It returns 0 for an empty set.
func (r RTR) Pick() RTR {
	for _, o := range [...]RTR{RTRWrite, RTRRead, RTRSend} {
		if r&o != 0 {
			return o
		}
	}
	return 0
}

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

const (
	flagA  = 0x8000 // first half-word
	flagB  = 0x4000 // first half-word
	flagC  = 0x8000 // second half-word
	flagD  = 0x4000 // second half-word
	mask14 = 0x3FFF
)

// ParseIRDORD parses the 4-octet word at the start of b. Every 32-bit value
// is valid; B, C and D are ignored when A is 0 (RFC 6581 §9.2). It returns
// ErrTruncated if b is shorter than IRDORDLen.
func ParseIRDORD(b []byte) (IRDORD, int, error) {
	if len(b) < IRDORDLen {
		return IRDORD{}, 0, fmt.Errorf("%w: IRD/ORD word needs %d octets, have %d", errTruncated, IRDORDLen, len(b))
	}
	hi := binary.BigEndian.Uint16(b)
	lo := binary.BigEndian.Uint16(b[2:])
	w := IRDORD{PeerToPeer: hi&flagA != 0, IRD: hi & mask14, ORD: lo & mask14}
	if w.PeerToPeer {
		if hi&flagB != 0 {
			w.RTR |= RTRSend
		}
		if lo&flagC != 0 {
			w.RTR |= RTRWrite
		}
		if lo&flagD != 0 {
			w.RTR |= RTRRead
		}
	}
	return w, IRDORDLen, nil
}

// Len returns IRDORDLen.
func (IRDORD) len() int { return IRDORDLen }

// Wire returns w as Append puts it on the wire: IRD and ORD cut to 14 bits,
// and no RTR options unless PeerToPeer (RFC 6581 §9.2).
func (w IRDORD) Wire() IRDORD {
	w.IRD &= mask14
	w.ORD &= mask14
	if w.PeerToPeer {
		w.RTR &= RTRAll
	} else {
		w.RTR = 0
	}
	return w
}

// Validate reports ErrInvalidIRDORD if IRD or ORD exceeds 14 bits.
func (w IRDORD) Validate() error {
	if w.IRD > maxIRDORD || w.ORD > maxIRDORD {
		return fmt.Errorf("%w: IRD %d ORD %d", ErrInvalidIRDORD, w.IRD, w.ORD)
	}
	return nil
}

// Append appends the 4-octet wire form of w to b. IRD and ORD are cut to 14
// bits (call Validate first); B, C and D are sent as 0 unless PeerToPeer
// (RFC 6581 §9.2). It allocates nothing when b has room.
func (w IRDORD) Append(b []byte) []byte {
	hi := w.IRD & mask14
	lo := w.ORD & mask14
	if w.PeerToPeer {
		hi |= flagA
		if w.RTR&RTRSend != 0 {
			hi |= flagB
		}
		if w.RTR&RTRWrite != 0 {
			lo |= flagC
		}
		if w.RTR&RTRRead != 0 {
			lo |= flagD
		}
	}
	b = binary.BigEndian.AppendUint16(b, hi)
	return binary.BigEndian.AppendUint16(b, lo)
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
