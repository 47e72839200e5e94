package ddp

import "github.com/sctp-rdma/sctp-rdma/iwarp"

// Control is the DDP Control Field, the first octet of every DDP header
// (RFC 5041 §4.1, Figure 3):
//
//	+-+-+-+-+-+-+-+-+
//	|T|L| Rsvd  |DV |
//	+-+-+-+-+-+-+-+-+
type Control uint8

// Bits of the DDP Control Field (RFC 5041 §4.1).
const (
	// ControlTagged is the T flag: the payload goes to a Tagged Buffer.
	ControlTagged Control = 0x80
	// ControlLast is the L flag: the last segment of a DDP message.
	ControlLast Control = 0x40
	// ControlRsvdMask covers the 4 reserved bits: "MUST be set to zero on
	// transmit, and not checked on receive".
	ControlRsvdMask Control = 0x3c
	// ControlDVMask covers the 2-bit DDP version.
	ControlDVMask Control = 0x03
)

// Version is the DDP version of RFC 5041, carried in the DV field.
const Version = 1

// ControlLen is the length of the DDP Control Field in octets.
const ControlLen = 1

// NewControl returns the control field a sender transmits: T and L as given,
// reserved bits zero, DV = Version (RFC 5041 §4.1).
func NewControl(tagged, last bool) Control {
	c := Control(Version)
	if tagged {
		c |= ControlTagged
	}
	if last {
		c |= ControlLast
	}
	return c
}

// Tagged reports the T flag.
func (c Control) Tagged() bool { return c&ControlTagged != 0 }

// Last reports the L flag.
func (c Control) Last() bool { return c&ControlLast != 0 }

// DV returns the 2-bit DDP version.
func (c Control) DV() uint8 { return uint8(c & ControlDVMask) }

// Check validates the control field as a Data Sink must (RFC 5041 §4.1):
// DV must be Version; the reserved bits are not checked. A bad DV is
// reported as *Error with Type TypeTagged, Code CodeTaggedVersion (0x04)
// when T is set, and Type TypeUntagged, Code CodeUntaggedVersion (0x06)
// otherwise (RFC 5041 §7.2), wrapping ErrVersion.
func (c Control) Check() error {
	if c.DV() == Version {
		return nil
	}
	if c.Tagged() {
		return NewError(iwarp.TermDDPTaggedVersion, ErrVersion)
	}
	return NewError(iwarp.TermDDPUntaggedVersion, ErrVersion)
}

// HeaderLen returns the length of the DDP header this control field begins:
// TaggedHeaderLen or UntaggedHeaderLen (RFC 5041 §4.2, §4.3).
func (c Control) HeaderLen() int {
	if c.Tagged() {
		return TaggedHeaderLen
	}
	return UntaggedHeaderLen
}

// ParseControl parses and checks the control field at the start of b. It
// returns the field, the octets consumed (1) and an error: a *Error of
// TypeLocalCatastrophic wrapping ErrTruncated if b is empty, or the
// version error of Check.
func ParseControl(b []byte) (Control, int, error) {
	if len(b) < ControlLen {
		return 0, 0, NewError(iwarp.TermDDPLocalCatastrophic, ErrTruncated)
	}
	c := Control(b[0])
	if err := c.Check(); err != nil {
		return c, 0, err
	}
	return c, ControlLen, nil
}

// Append appends the control field to b with the reserved bits cleared
// (RFC 5041 §4.1: zero on transmit).
func (c Control) Append(b []byte) []byte { return append(b, byte(c&^ControlRsvdMask)) }

// Len returns ControlLen.
func (c Control) Len() int { return ControlLen }
