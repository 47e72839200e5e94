package iwarpwire

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// IRDORDLen is the length of the enhanced RDMA connection establishment
// data (RFC 6581 §9).
const IRDORDLen = 4

// Bits of the IRD/ORD word (RFC 6581 §9): flags A and B in the first
// half-word, C and D in the second, a 14-bit depth below each pair.
const (
	flagA  = 0x8000
	flagB  = 0x4000
	flagC  = 0x8000
	flagD  = 0x4000
	mask14 = 0x3FFF
)

// ParseIRDORD parses the 4-octet word at the start of b. Every 32-bit value
// is valid; B, C and D are ignored when A is 0 (RFC 6581 §9.2). It returns
// an error wrapping ErrTruncated if b is shorter than IRDORDLen.
func ParseIRDORD(b []byte) (iwarp.IRDORD, int, error) {
	if len(b) < IRDORDLen {
		return iwarp.IRDORD{}, 0, fmt.Errorf("%w: IRD/ORD word needs %d octets, have %d", ErrTruncated, IRDORDLen, len(b))
	}
	hi := binary.BigEndian.Uint16(b)
	lo := binary.BigEndian.Uint16(b[2:])
	w := iwarp.IRDORD{PeerToPeer: hi&flagA != 0, IRD: hi & mask14, ORD: lo & mask14}
	if w.PeerToPeer {
		if hi&flagB != 0 {
			w.RTR |= iwarp.RTRSend
		}
		if lo&flagC != 0 {
			w.RTR |= iwarp.RTRWrite
		}
		if lo&flagD != 0 {
			w.RTR |= iwarp.RTRRead
		}
	}
	return w, IRDORDLen, nil
}

// WireIRDORD returns w as AppendIRDORD puts it on the wire: IRD and ORD
// cut to 14 bits, and no RTR options unless PeerToPeer (RFC 6581 §9.2).
func WireIRDORD(w iwarp.IRDORD) iwarp.IRDORD {
	w.IRD &= mask14
	w.ORD &= mask14
	if w.PeerToPeer {
		w.RTR &= iwarp.RTRAll
	} else {
		w.RTR = 0
	}
	return w
}

// AppendIRDORD appends the 4-octet wire form of w to b. IRD and ORD are
// cut to 14 bits (call Validate first); B, C and D are sent as 0 unless
// PeerToPeer (RFC 6581 §9.2). It allocates nothing when b has room.
func AppendIRDORD(b []byte, w iwarp.IRDORD) []byte {
	hi := w.IRD & mask14
	lo := w.ORD & mask14
	if w.PeerToPeer {
		hi |= flagA
		if w.RTR&iwarp.RTRSend != 0 {
			hi |= flagB
		}
		if w.RTR&iwarp.RTRWrite != 0 {
			lo |= flagC
		}
		if w.RTR&iwarp.RTRRead != 0 {
			lo |= flagD
		}
	}
	b = binary.BigEndian.AppendUint16(b, hi)
	return binary.BigEndian.AppendUint16(b, lo)
}

// PickRTR returns the single option the Initiator sends out of r: a
// zero-length RDMA Write (what Linux siw sends by default), else a
// zero-length Read, else a Send. It returns 0 for an empty set.
func PickRTR(r iwarp.RTR) iwarp.RTR {
	for _, o := range [...]iwarp.RTR{iwarp.RTRWrite, iwarp.RTRRead, iwarp.RTRSend} {
		if r&o != 0 {
			return o
		}
	}
	return 0
}
