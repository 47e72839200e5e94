package sctpllp

import (
	"encoding/binary"
	"fmt"
)

// IRDORDLen is the length of the RFC 6581 §9 word.
const IRDORDLen = 4

// IRDORDNoNegotiation (0x3FFF, all ones) in IRD or ORD means that automatic
// negotiation is not desired (RFC 6581 §9.1).
const IRDORDNoNegotiation = 0x3FFF

// IRDORD is the enhanced RDMA connection establishment data of RFC 6581 §9,
// the first 32 bits of the private data of the enhanced session control
// messages, in network byte order:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|A|B|        IRD                |C|D|        ORD                |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// RFC 6581 defines one layout for MPA and SCTP alike (§9: "the MPA Request
// and Reply Frames or the DDP Stream Session Initiate and DDP Stream
// Session Accept SCTP Session Control Chunks").
//
// Flags B, C and D belong to the peer-to-peer model of flag A: "If Control
// Flag A is set to 0, then Control Flags B, C, and D MUST also be set to 0.
// On reception, if Control Flag A is set to 0, then Control Flags B, C, and
// D MUST be ignored" (§9.2). Append therefore sends them as 0 and
// ParseIRDORD reports them as false unless PeerToPeer; a word with A = 0 and
// B, C or D set is accepted, not rejected. Neither RFC 6581 nor RFC 5043
// adds an SCTP-specific rule for the flags: RFC 5043 predates the word, and
// RFC 6581 §7 offers the peer-to-peer model over SCTP too ("a
// transport-independent way to support the peer-to-peer model"), so with
// A = 1 they are negotiated as over MPA.
type IRDORD struct {
	// PeerToPeer is flag A: the peer-to-peer connection model (§9.2).
	PeerToPeer bool
	// SendRTR is flag B: zero-length Send as ready-to-receive indication.
	SendRTR bool
	// WriteRTR is flag C: zero-length RDMA Write as RTR indication.
	WriteRTR bool
	// ReadRTR is flag D: zero-length RDMA Read as RTR indication.
	ReadRTR bool
	// IRD is the inbound RDMA Read queue depth, 14 bits.
	IRD uint16
	// ORD is the outbound RDMA Read queue depth, 14 bits.
	ORD uint16
}

const (
	flagA   = 0x8000
	flagB   = 0x4000
	flagC   = 0x8000
	flagD   = 0x4000
	mask14  = 0x3FFF
	maxIRDO = 0x3FFF
)

// ParseIRDORD parses the 4-octet word at the start of b. Every value is
// accepted; B, C and D are ignored (reported false) when A is 0
// (RFC 6581 §9.2).
func ParseIRDORD(b []byte) (IRDORD, int, error) {
	if len(b) < IRDORDLen {
		return IRDORD{}, 0, fmt.Errorf("%w: IRD/ORD word needs 4 octets, have %d", ErrTruncated, len(b))
	}
	hi := binary.BigEndian.Uint16(b)
	lo := binary.BigEndian.Uint16(b[2:])
	return IRDORD{
		PeerToPeer: hi&flagA != 0,
		SendRTR:    hi&flagB != 0,
		WriteRTR:   lo&flagC != 0,
		ReadRTR:    lo&flagD != 0,
		IRD:        hi & mask14,
		ORD:        lo & mask14,
	}.wire(), IRDORDLen, nil
}

// wire returns w as it goes on the wire: without flags B, C and D unless
// PeerToPeer (RFC 6581 §9.2).
func (w IRDORD) wire() IRDORD {
	if !w.PeerToPeer {
		w.SendRTR, w.WriteRTR, w.ReadRTR = false, false, false
	}
	return w
}

// Len returns 4.
func (w IRDORD) Len() int { return IRDORDLen }

// Validate reports ErrInvalidIRDORD if IRD or ORD exceeds 14 bits.
func (w IRDORD) Validate() error {
	if w.IRD > maxIRDO || w.ORD > maxIRDO {
		return fmt.Errorf("%w: IRD %d ORD %d", ErrInvalidIRDORD, w.IRD, w.ORD)
	}
	return nil
}

// Append appends the encoded word to b; IRD and ORD are truncated to 14
// bits (call Validate first), and B, C and D are sent as 0 unless
// PeerToPeer (RFC 6581 §9.2). It allocates nothing when b has capacity.
func (w IRDORD) Append(b []byte) []byte {
	hi := w.IRD & mask14
	lo := w.ORD & mask14
	if w.PeerToPeer {
		hi |= flagA
		if w.SendRTR {
			hi |= flagB
		}
		if w.WriteRTR {
			lo |= flagC
		}
		if w.ReadRTR {
			lo |= flagD
		}
	}
	b = binary.BigEndian.AppendUint16(b, hi)
	return binary.BigEndian.AppendUint16(b, lo)
}
