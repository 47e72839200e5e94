package ddp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
)

// Segment is one parsed DDP segment: a DDP header and the ULP payload after
// it (RFC 5041 §4.4, Figure 6). The LLP supplies the segment length
// (RFC 5041 §3 requirement 7), so the payload is everything after the header.
type Segment struct {
	// Tagged is the T flag: Tag is meaningful if set, Untag otherwise.
	Tagged bool
	// Tag is the tagged header (RFC 5041 §4.2), if Tagged.
	Tag TaggedHeader
	// Untag is the untagged header (RFC 5041 §4.3), if !Tagged.
	Untag UntaggedHeader
	// HeaderLen is iwarpwire.DDPTaggedHeaderLen or iwarpwire.DDPUntaggedHeaderLen.
	HeaderLen int
	// Payload is the ULP payload; it aliases the parsed slice.
	Payload []byte
}

// Last reports the L flag of whichever header the segment has.
func (s *Segment) last() bool {
	if s.Tagged {
		return s.Tag.Last
	}
	return s.Untag.Last
}

// ParseSegment parses the DDP segment b into s, dispatching on the T flag.
// It allocates nothing; s.Payload aliases b. On error s is left zeroed
// except that s.Tagged reflects the T flag when b is not empty. Errors are
// those of ParseControl, ParseTaggedHeader and ParseUntaggedHeader: the
// Version errors of RFC 5041 §7.2 (Type 0x1 Code 0x04, Type 0x2 Code 0x06)
// and, for a segment shorter than its header, TypeLocalCatastrophic wrapping
// ErrTruncated.
func ParseSegment(b []byte, s *Segment) error {
	// A well-formed header (the common case) is parsed in place: s is not
	// zeroed first and no header passes through a return value, which were
	// a tenth of the receive path's CPU for a small message. Anything else
	// takes the general path below, whose errors are the documented ones.
	if len(b) >= iwarpwire.DDPUntaggedHeaderLen && Control(b[0]).DV() == iwarpwire.DDPVersion {
		c := Control(b[0])
		if c.Tagged() {
			s.Tagged, s.Untag = true, UntaggedHeader{}
			s.Tag.Decode(b)
			s.HeaderLen, s.Payload = iwarpwire.DDPTaggedHeaderLen, b[iwarpwire.DDPTaggedHeaderLen:]
			return nil
		}
		s.Tagged, s.Tag = false, TaggedHeader{}
		s.Untag.Decode(b)
		s.HeaderLen, s.Payload = iwarpwire.DDPUntaggedHeaderLen, b[iwarpwire.DDPUntaggedHeaderLen:]
		return nil
	}
	*s = Segment{}
	if len(b) == 0 {
		_, _, err := parseControl(b)
		return err
	}
	s.Tagged = Control(b[0]).Tagged()
	var (
		n   int
		err error
	)
	if s.Tagged {
		s.Tag, n, err = ParseTaggedHeader(b)
	} else {
		s.Untag, n, err = ParseUntaggedHeader(b)
	}
	if err != nil {
		return err
	}
	s.HeaderLen = n
	s.Payload = b[n:]
	return nil
}

// Append appends the segment's wire image (header, then payload) to b.
func (s *Segment) append(b []byte) []byte {
	if s.Tagged {
		b = s.Tag.Append(b)
	} else {
		b = s.Untag.Append(b)
	}
	return append(b, s.Payload...)
}

// Len returns the segment's length on the wire: header plus payload.
func (s *Segment) len() int {
	if s.Tagged {
		return iwarpwire.DDPTaggedHeaderLen + len(s.Payload)
	}
	return iwarpwire.DDPUntaggedHeaderLen + len(s.Payload)
}
