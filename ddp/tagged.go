package ddp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// TaggedHeader is the DDP Tagged Buffer Model header (RFC 5041 §4.2); its
// layout is iwarp's, the one the whole stack encodes.
type TaggedHeader = iwarpwire.DDPTaggedHeader

// ParseTaggedHeader parses a tagged DDP header at the start of b. It returns
// the header and iwarpwire.DDPTaggedHeaderLen octets consumed, or an error: the
// Version error of ParseControl (Type 0x1, Code 0x04) if DV is not 1; a
// plain error wrapping ErrNotTagged if T is clear; a *Error of
// TypeLocalCatastrophic wrapping ErrTruncated if b is shorter than the
// header. Reserved bits are not checked (RFC 5041 §4.1).
func ParseTaggedHeader(b []byte) (TaggedHeader, int, error) {
	c, _, err := parseControl(b)
	if err != nil {
		return TaggedHeader{}, 0, err
	}
	if !c.Tagged() {
		return TaggedHeader{}, 0, errNotTagged
	}
	if len(b) < iwarpwire.DDPTaggedHeaderLen {
		return TaggedHeader{}, 0, NewError(iwarp.Term.DDPLocalCatastrophic, errTruncated)
	}
	var h TaggedHeader
	h.Decode(b)
	return h, iwarpwire.DDPTaggedHeaderLen, nil
}
