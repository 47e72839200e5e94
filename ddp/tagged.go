package ddp

import (
	"encoding/binary"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// TaggedHeaderLen is the length of the DDP Tagged Buffer Model header
// (RFC 5041 §4.2, Figure 4): control 1, RsvdULP 1, STag 4, TO 8.
const TaggedHeaderLen = 14

// TaggedHeader is the DDP header of a segment placed into a Tagged Buffer
// (RFC 5041 §4.2, Figure 4):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|T|L| Rsvd  | DV|   RsvdULP     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                              STag                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                               TO                              |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// T is implied (1) and DV is always Version.
type TaggedHeader struct {
	// Last is the L flag (RFC 5041 §4.1).
	Last bool
	// RsvdULP is the 8-bit field opaque to DDP; RDMAP puts its control
	// octet here (RFC 5040 §4.2).
	RsvdULP uint8
	// STag is the Steering Tag of the Data Sink's Tagged Buffer.
	STag uint32
	// TO is the Tagged Offset of the first payload octet.
	TO uint64
}

// ParseTaggedHeader parses a tagged DDP header at the start of b. It returns
// the header and TaggedHeaderLen octets consumed, or an error: the version
// error of Control.Check (Type 0x1, Code 0x04) if DV is not 1; a plain error
// wrapping ErrNotTagged if T is clear; a *Error of TypeLocalCatastrophic
// wrapping ErrTruncated if b is shorter than the header. Reserved bits are
// not checked (RFC 5041 §4.1).
func ParseTaggedHeader(b []byte) (TaggedHeader, int, error) {
	c, _, err := ParseControl(b)
	if err != nil {
		return TaggedHeader{}, 0, err
	}
	if !c.Tagged() {
		return TaggedHeader{}, 0, ErrNotTagged
	}
	if len(b) < TaggedHeaderLen {
		return TaggedHeader{}, 0, NewError(iwarp.TermDDPLocalCatastrophic, ErrTruncated)
	}
	return TaggedHeader{
		Last:    c.Last(),
		RsvdULP: b[1],
		STag:    binary.BigEndian.Uint32(b[2:6]),
		TO:      binary.BigEndian.Uint64(b[6:14]),
	}, TaggedHeaderLen, nil
}

// Append appends the header's wire image (T=1, reserved bits zero, DV=1) to
// b. It allocates nothing when b has TaggedHeaderLen octets of spare
// capacity.
func (h *TaggedHeader) Append(b []byte) []byte {
	b = NewControl(true, h.Last).Append(b)
	b = append(b, h.RsvdULP)
	b = binary.BigEndian.AppendUint32(b, h.STag)
	return binary.BigEndian.AppendUint64(b, h.TO)
}

// Len returns TaggedHeaderLen.
func (h *TaggedHeader) Len() int { return TaggedHeaderLen }
