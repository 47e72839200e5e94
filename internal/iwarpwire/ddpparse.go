package iwarpwire

import "github.com/sctp-rdma/sctp-rdma/iwarp"

// checkDDPControl validates the control field as a Data Sink must (RFC 5041
// §4.1): DV must be DDPVersion; the reserved bits are not checked. A
// bad DV is reported as the *DDPError of iwarp.Term.DDPTaggedVersion when T is
// set and of iwarp.Term.DDPUntaggedVersion otherwise (RFC 5041 §7.2),
// wrapping ErrDDPVersion.
func checkDDPControl(c DDPControl) error {
	if c.DV() == DDPVersion {
		return nil
	}
	if c.Tagged() {
		return NewDDPError(iwarp.Term.DDPTaggedVersion, ErrDDPVersion)
	}
	return NewDDPError(iwarp.Term.DDPUntaggedVersion, ErrDDPVersion)
}

// parseDDPControl parses and checks the control field at the start of b. It
// returns the field, the octets consumed (1) and an error: a *DDPError of
// iwarp.Term.DDPLocalCatastrophic wrapping ErrDDPTruncated if b is empty, or the
// Version error of checkDDPControl.
func parseDDPControl(b []byte) (DDPControl, int, error) {
	if len(b) < DDPControlLen {
		return 0, 0, NewDDPError(iwarp.Term.DDPLocalCatastrophic, ErrDDPTruncated)
	}
	c := DDPControl(b[0])
	if err := checkDDPControl(c); err != nil {
		return c, 0, err
	}
	return c, DDPControlLen, nil
}

// DDPSegment is one parsed DDP segment: a DDP header and the ULP payload after
// it (RFC 5041 §4.4, Figure 6). The LLP supplies the segment length
// (RFC 5041 §3 requirement 7), so the payload is everything after the header.
type DDPSegment struct {
	// Tagged is the T flag: Tag is meaningful if set, Untag otherwise.
	Tagged bool
	// Tag is the tagged header (RFC 5041 §4.2), if Tagged.
	Tag DDPTaggedHeader
	// Untag is the untagged header (RFC 5041 §4.3), if !Tagged.
	Untag DDPUntaggedHeader
	// HeaderLen is DDPTaggedHeaderLen or DDPUntaggedHeaderLen.
	HeaderLen int
	// Payload is the ULP payload; it aliases the parsed slice.
	Payload []byte
}

// Last reports the L flag of whichever header the segment has.
func (s *DDPSegment) last() bool {
	if s.Tagged {
		return s.Tag.Last
	}
	return s.Untag.Last
}

// ParseDDPSegment parses the DDP segment b into s, dispatching on the T flag.
// It allocates nothing; s.Payload aliases b. On error s is left zeroed
// except that s.Tagged reflects the T flag when b is not empty. Errors are
// those of ParseControl, ParseDDPTaggedHeader and ParseDDPUntaggedHeader: the
// Version errors of RFC 5041 §7.2 (Type 0x1 Code 0x04, Type 0x2 Code 0x06)
// and, for a segment shorter than its header, iwarp.Term.DDPLocalCatastrophic wrapping
// ErrDDPTruncated.
func ParseDDPSegment(b []byte, s *DDPSegment) error {
	// A well-formed header (the common case) is parsed in place: s is not
	// zeroed first and no header passes through a return value, which were
	// a tenth of the receive path's CPU for a small message. Anything else
	// takes the general path below, whose errors are the documented ones.
	if len(b) >= DDPUntaggedHeaderLen && DDPControl(b[0]).DV() == DDPVersion {
		c := DDPControl(b[0])
		if c.Tagged() {
			s.Tagged, s.Untag = true, DDPUntaggedHeader{}
			s.Tag.Decode(b)
			s.HeaderLen, s.Payload = DDPTaggedHeaderLen, b[DDPTaggedHeaderLen:]
			return nil
		}
		s.Tagged, s.Tag = false, DDPTaggedHeader{}
		s.Untag.Decode(b)
		s.HeaderLen, s.Payload = DDPUntaggedHeaderLen, b[DDPUntaggedHeaderLen:]
		return nil
	}
	*s = DDPSegment{}
	if len(b) == 0 {
		_, _, err := parseDDPControl(b)
		return err
	}
	s.Tagged = DDPControl(b[0]).Tagged()
	var (
		n   int
		err error
	)
	if s.Tagged {
		s.Tag, n, err = ParseDDPTaggedHeader(b)
	} else {
		s.Untag, n, err = ParseDDPUntaggedHeader(b)
	}
	if err != nil {
		return err
	}
	s.HeaderLen = n
	s.Payload = b[n:]
	return nil
}

// Append appends the segment's wire image (header, then payload) to b.
func (s *DDPSegment) append(b []byte) []byte {
	if s.Tagged {
		b = s.Tag.Append(b)
	} else {
		b = s.Untag.Append(b)
	}
	return append(b, s.Payload...)
}

// Len returns the segment's length on the wire: header plus payload.
func (s *DDPSegment) len() int {
	if s.Tagged {
		return DDPTaggedHeaderLen + len(s.Payload)
	}
	return DDPUntaggedHeaderLen + len(s.Payload)
}

// ParseDDPTaggedHeader parses a tagged DDP header at the start of b. It returns
// the header and DDPTaggedHeaderLen octets consumed, or an error: the
// Version error of parseDDPControl (Type 0x1, Code 0x04) if DV is not 1; a
// plain error wrapping ErrNotTagged if T is clear; a *DDPError of
// iwarp.Term.DDPLocalCatastrophic wrapping ErrDDPTruncated if b is shorter than the
// header. Reserved bits are not checked (RFC 5041 §4.1).
func ParseDDPTaggedHeader(b []byte) (DDPTaggedHeader, int, error) {
	c, _, err := parseDDPControl(b)
	if err != nil {
		return DDPTaggedHeader{}, 0, err
	}
	if !c.Tagged() {
		return DDPTaggedHeader{}, 0, ErrNotTagged
	}
	if len(b) < DDPTaggedHeaderLen {
		return DDPTaggedHeader{}, 0, NewDDPError(iwarp.Term.DDPLocalCatastrophic, ErrDDPTruncated)
	}
	var h DDPTaggedHeader
	h.Decode(b)
	return h, DDPTaggedHeaderLen, nil
}

// ParseDDPUntaggedHeader parses an untagged DDP header at the start of b. It
// returns the header and DDPUntaggedHeaderLen octets consumed, or an
// error: the version error of ParseControl (Type 0x2, Code 0x06) if DV is
// not 1; a plain error wrapping ErrNotUntagged if T is set; a *DDPError of
// iwarp.Term.DDPLocalCatastrophic wrapping ErrDDPTruncated if b is shorter than the
// header. Reserved bits are not checked (RFC 5041 §4.1).
func ParseDDPUntaggedHeader(b []byte) (DDPUntaggedHeader, int, error) {
	c, _, err := parseDDPControl(b)
	if err != nil {
		return DDPUntaggedHeader{}, 0, err
	}
	if c.Tagged() {
		return DDPUntaggedHeader{}, 0, ErrNotUntagged
	}
	if len(b) < DDPUntaggedHeaderLen {
		return DDPUntaggedHeader{}, 0, NewDDPError(iwarp.Term.DDPLocalCatastrophic, ErrDDPTruncated)
	}
	var h DDPUntaggedHeader
	h.Decode(b)
	return h, DDPUntaggedHeaderLen, nil
}
