package ddp

import (
	"encoding/binary"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// UntaggedHeaderLen is the length of the DDP Untagged Buffer Model header
// (RFC 5041 §4.3, Figure 5): control 1, RsvdULP 5, QN 4, MSN 4, MO 4.
const UntaggedHeaderLen = 18

// UntaggedHeader is the DDP header of a segment placed into an Untagged
// Buffer (RFC 5041 §4.3, Figure 5):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|T|L| Rsvd  | DV| RsvdULP[0:7]  |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            RsvdULP[8:39]                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                               QN                              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                              MSN                              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                               MO                              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// T is implied (0) and DV is always Version.
type UntaggedHeader struct {
	// Last is the L flag (RFC 5041 §4.1).
	Last bool
	// RsvdULP is the 40-bit field opaque to DDP. RDMAP puts its control
	// octet in RsvdULP[0] and the Invalidate STag (Send with Invalidate,
	// big-endian) in RsvdULP[1:5] (RFC 5040 §4.1).
	RsvdULP [5]byte
	// QN is the Queue Number.
	QN uint32
	// MSN is the Message Sequence Number (first 1, wraps after 0xFFFFFFFF).
	MSN uint32
	// MO is the Message Offset of the first payload octet.
	MO uint32
}

// ParseUntaggedHeader parses an untagged DDP header at the start of b. It
// returns the header and UntaggedHeaderLen octets consumed, or an error: the
// version error of Control.Check (Type 0x2, Code 0x06) if DV is not 1; a
// plain error wrapping ErrNotUntagged if T is set; a *Error of
// TypeLocalCatastrophic wrapping ErrTruncated if b is shorter than the
// header. Reserved bits are not checked (RFC 5041 §4.1).
func ParseUntaggedHeader(b []byte) (UntaggedHeader, int, error) {
	c, _, err := ParseControl(b)
	if err != nil {
		return UntaggedHeader{}, 0, err
	}
	if c.Tagged() {
		return UntaggedHeader{}, 0, ErrNotUntagged
	}
	if len(b) < UntaggedHeaderLen {
		return UntaggedHeader{}, 0, NewError(iwarp.TermDDPLocalCatastrophic, ErrTruncated)
	}
	h := UntaggedHeader{
		Last: c.Last(),
		QN:   binary.BigEndian.Uint32(b[6:10]),
		MSN:  binary.BigEndian.Uint32(b[10:14]),
		MO:   binary.BigEndian.Uint32(b[14:18]),
	}
	copy(h.RsvdULP[:], b[1:6])
	return h, UntaggedHeaderLen, nil
}

// Append appends the header's wire image (T=0, reserved bits zero, DV=1) to
// b. It allocates nothing when b has UntaggedHeaderLen octets of spare
// capacity.
func (h *UntaggedHeader) Append(b []byte) []byte {
	b = NewControl(false, h.Last).Append(b)
	b = append(b, h.RsvdULP[:]...)
	b = binary.BigEndian.AppendUint32(b, h.QN)
	b = binary.BigEndian.AppendUint32(b, h.MSN)
	return binary.BigEndian.AppendUint32(b, h.MO)
}

// Len returns UntaggedHeaderLen.
func (h *UntaggedHeader) Len() int { return UntaggedHeaderLen }
