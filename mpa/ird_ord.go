package mpa

import "encoding/binary"

// IRDORDLen is the length of the enhanced RDMA connection establishment data
// (RFC 6581 §9).
const IRDORDLen = 4

// NoNegotiation is the all-ones 14-bit IRD or ORD value: automatic
// negotiation of that value is not desired (RFC 6581 §9.1).
const NoNegotiation = 0x3FFF

// RTRFlags is a set of Ready-to-Receive indication options, Control Flags
// B, C and D of RFC 6581 §9.
type RTRFlags uint8

// RTR indication options (RFC 6581 §9.2). The RTR message itself is an
// RDMAP message (a zero-length Send, RDMA Write or RDMA Read) sent by the
// RDMAP layer; this package only negotiates which one.
const (
	// RTRSend (Control Flag B): a zero-length FULPDU (Send) RTR indication.
	RTRSend RTRFlags = 1 << iota
	// RTRWrite (Control Flag C): a zero-length RDMA Write RTR indication.
	RTRWrite
	// RTRRead (Control Flag D): a zero-length RDMA Read RTR indication.
	RTRRead

	// RTRAll is every RTR indication option.
	RTRAll = RTRSend | RTRWrite | RTRRead
)

// Has reports whether every option in o is in f.
func (f RTRFlags) Has(o RTRFlags) bool { return f&o == o }

// Pick returns the single preferred option of f: a zero-length RDMA Write
// (what Linux siw sends by default), then a zero-length Read, then a Send.
// It returns 0 for an empty set.
func (f RTRFlags) Pick() RTRFlags {
	for _, o := range [...]RTRFlags{RTRWrite, RTRRead, RTRSend} {
		if f&o != 0 {
			return o
		}
	}
	return 0
}

// String names the options of f.
func (f RTRFlags) String() string {
	if f&RTRAll == 0 {
		return "none"
	}
	s := ""
	for _, o := range [...]struct {
		f RTRFlags
		n string
	}{{RTRSend, "send"}, {RTRWrite, "write"}, {RTRRead, "read"}} {
		if f&o.f != 0 {
			if s != "" {
				s += "|"
			}
			s += o.n
		}
	}
	return s
}

// IRDORD is the enhanced RDMA connection establishment data that begins the
// Private Data of an enhanced MPA Request or Reply (S = 1, RFC 6581 §9):
//
//	0                   1                   2                   3
//	0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|B|        IRD                |C|D|        ORD                |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type IRDORD struct {
	// PeerToPeer is Control Flag A: the peer-to-peer connection model
	// (RFC 6581 §9.2).
	PeerToPeer bool
	// RTR holds Control Flags B, C, D. RFC 6581 §9.2: when A is 0 they MUST
	// be sent as 0 and ignored on reception, so Parse and Append treat
	// them as empty when PeerToPeer is false.
	RTR RTRFlags
	// IRD is the Inbound RDMA Read Queue Depth, 14 bits (NoNegotiation =
	// not negotiated).
	IRD uint16
	// ORD is the Outbound RDMA Read Queue Depth, 14 bits.
	ORD uint16
}

const (
	irdFlagA = 0x8000
	irdFlagB = 0x4000
	irdFlagC = 0x8000
	irdFlagD = 0x4000
	mask14   = 0x3FFF
)

// ParseIRDORD parses the 4-octet enhanced connection establishment data at
// the start of b (RFC 6581 §9, network byte order). Every 32-bit value is
// valid; B, C and D are ignored when A is 0 (RFC 6581 §9.2). It returns
// ErrTruncated if b is shorter than 4 octets.
func ParseIRDORD(b []byte) (IRDORD, int, error) {
	if len(b) < IRDORDLen {
		return IRDORD{}, 0, ErrTruncated
	}
	hi := binary.BigEndian.Uint16(b)
	lo := binary.BigEndian.Uint16(b[2:])
	v := IRDORD{
		PeerToPeer: hi&irdFlagA != 0,
		IRD:        hi & mask14,
		ORD:        lo & mask14,
	}
	if v.PeerToPeer {
		if hi&irdFlagB != 0 {
			v.RTR |= RTRSend
		}
		if lo&irdFlagC != 0 {
			v.RTR |= RTRWrite
		}
		if lo&irdFlagD != 0 {
			v.RTR |= RTRRead
		}
	}
	return v, IRDORDLen, nil
}

// Append appends the 4-octet wire form of v. IRD and ORD are truncated to 14
// bits; B, C and D are sent as 0 unless PeerToPeer (RFC 6581 §9.2). It
// allocates nothing when b has room.
func (v IRDORD) Append(b []byte) []byte {
	hi := v.IRD & mask14
	lo := v.ORD & mask14
	if v.PeerToPeer {
		hi |= irdFlagA
		if v.RTR&RTRSend != 0 {
			hi |= irdFlagB
		}
		if v.RTR&RTRWrite != 0 {
			lo |= irdFlagC
		}
		if v.RTR&RTRRead != 0 {
			lo |= irdFlagD
		}
	}
	b = binary.BigEndian.AppendUint16(b, hi)
	return binary.BigEndian.AppendUint16(b, lo)
}

// Len returns IRDORDLen.
func (IRDORD) Len() int { return IRDORDLen }
