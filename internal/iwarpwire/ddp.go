package iwarpwire

import "encoding/binary"

// DDP header lengths (RFC 5041 §4.2 Figure 4, §4.3 Figure 5).
const (
	// DDPControlLen is the DDP Control Field.
	DDPControlLen = 1
	// DDPTaggedHeaderLen is the Tagged Buffer Model header: control 1,
	// RsvdULP 1, STag 4, TO 8.
	DDPTaggedHeaderLen = 14
	// DDPUntaggedHeaderLen is the Untagged Buffer Model header: control 1,
	// RsvdULP 5, QN 4, MSN 4, MO 4.
	DDPUntaggedHeaderLen = 18
)

// DDPVersion is the DDP version of RFC 5041, carried in the DV field.
const DDPVersion = 1

// DDPControl is the DDP Control Field, the first octet of every DDP header
// (RFC 5041 §4.1, Figure 3):
//
//	+-+-+-+-+-+-+-+-+
//	|T|L| Rsvd  |DV |
//	+-+-+-+-+-+-+-+-+
type DDPControl uint8

// Bits of the DDP Control Field (RFC 5041 §4.1).
const (
	// ddpControlTagged is the T flag: the payload goes to a Tagged Buffer.
	ddpControlTagged DDPControl = 0x80
	// DDPControlLast is the L flag: the last segment of a DDP message.
	DDPControlLast DDPControl = 0x40
	// DDPControlRsvdMask covers the 4 reserved bits: "MUST be set to zero on
	// transmit, and not checked on receive".
	DDPControlRsvdMask DDPControl = 0x3c
	// ddpControlDVMask covers the 2-bit DDP version.
	ddpControlDVMask DDPControl = 0x03
)

// NewDDPControl returns the control field a sender transmits: T and L as
// given, reserved bits zero, DV = DDPVersion (RFC 5041 §4.1).
func NewDDPControl(tagged, last bool) DDPControl {
	c := DDPControl(DDPVersion)
	if tagged {
		c |= ddpControlTagged
	}
	if last {
		c |= DDPControlLast
	}
	return c
}

// Tagged reports the T flag.
func (c DDPControl) Tagged() bool { return c&ddpControlTagged != 0 }

// Last reports the L flag.
func (c DDPControl) Last() bool { return c&DDPControlLast != 0 }

// DV returns the 2-bit DDP version.
func (c DDPControl) DV() uint8 { return uint8(c & ddpControlDVMask) }

// HeaderLen returns the length of the DDP header this control field begins:
// DDPTaggedHeaderLen or DDPUntaggedHeaderLen (RFC 5041 §4.2, §4.3).
func (c DDPControl) HeaderLen() int {
	if c.Tagged() {
		return DDPTaggedHeaderLen
	}
	return DDPUntaggedHeaderLen
}

// Append appends the control field to b with the reserved bits cleared
// (RFC 5041 §4.1: zero on transmit).
func (c DDPControl) Append(b []byte) []byte { return append(b, byte(c&^DDPControlRsvdMask)) }

// Len returns DDPControlLen.
func (c DDPControl) Len() int { return DDPControlLen }

// DDPTaggedHeader is the DDP header of a segment placed into a Tagged
// Buffer (RFC 5041 §4.2, Figure 4):
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|T|L| Rsvd  | DV|   RsvdULP     |  STag ... (4) | TO ... (8)    |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// T is implied (1) and DV is always DDPVersion. ParseDDPTaggedHeader
// checks and parses it.
type DDPTaggedHeader struct {
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

// Decode sets h from the tagged header at the start of b, which holds at
// least DDPTaggedHeaderLen octets; it checks nothing (ParseDDPSegment and
// ParseDDPTaggedHeader check first). It decodes in place, for the
// receive path.
func (h *DDPTaggedHeader) Decode(b []byte) {
	_ = b[DDPTaggedHeaderLen-1]
	h.Last = DDPControl(b[0]).Last()
	h.RsvdULP = b[1]
	h.STag = binary.BigEndian.Uint32(b[2:6])
	h.TO = binary.BigEndian.Uint64(b[6:DDPTaggedHeaderLen])
}

// Append appends the header's wire image (T=1, reserved bits zero, DV=1) to
// b. It allocates nothing when b has DDPTaggedHeaderLen octets of spare
// capacity.
func (h *DDPTaggedHeader) Append(b []byte) []byte {
	b = NewDDPControl(true, h.Last).Append(b)
	b = append(b, h.RsvdULP)
	b = binary.BigEndian.AppendUint32(b, h.STag)
	return binary.BigEndian.AppendUint64(b, h.TO)
}

// Len returns DDPTaggedHeaderLen.
func (h *DDPTaggedHeader) Len() int { return DDPTaggedHeaderLen }

// DDPUntaggedHeader is the DDP header of a segment placed into an Untagged
// Buffer (RFC 5041 §4.3, Figure 5):
//
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|T|L| Rsvd  | DV| RsvdULP[0:7]  | RsvdULP[8:39] (4) | QN | MSN | MO
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// T is implied (0) and DV is always DDPVersion; QN, MSN and MO are 4
// octets each. ParseDDPUntaggedHeader checks and parses it.
type DDPUntaggedHeader struct {
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

// Decode sets h from the untagged header at the start of b, which holds
// at least DDPUntaggedHeaderLen octets; it checks nothing (ParseDDPSegment
// and ParseDDPUntaggedHeader check first). It decodes in place, for the
// receive path.
func (h *DDPUntaggedHeader) Decode(b []byte) {
	_ = b[DDPUntaggedHeaderLen-1]
	h.Last = DDPControl(b[0]).Last()
	copy(h.RsvdULP[:], b[1:6])
	h.QN = binary.BigEndian.Uint32(b[6:10])
	h.MSN = binary.BigEndian.Uint32(b[10:14])
	h.MO = binary.BigEndian.Uint32(b[14:DDPUntaggedHeaderLen])
}

// Append appends the header's wire image (T=0, reserved bits zero, DV=1) to
// b. It allocates nothing when b has DDPUntaggedHeaderLen octets of spare
// capacity.
func (h *DDPUntaggedHeader) Append(b []byte) []byte {
	b = NewDDPControl(false, h.Last).Append(b)
	b = append(b, h.RsvdULP[:]...)
	b = binary.BigEndian.AppendUint32(b, h.QN)
	b = binary.BigEndian.AppendUint32(b, h.MSN)
	return binary.BigEndian.AppendUint32(b, h.MO)
}

// Len returns DDPUntaggedHeaderLen.
func (h *DDPUntaggedHeader) Len() int { return DDPUntaggedHeaderLen }
