package ddp

import (
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// UntaggedHeader is the DDP Untagged Buffer Model header (RFC 5041 §4.3);
// its layout is iwarp's, the one the whole stack encodes.
type UntaggedHeader = iwarpwire.DDPUntaggedHeader

// ParseUntaggedHeader parses an untagged DDP header at the start of b. It
// returns the header and iwarpwire.DDPUntaggedHeaderLen octets consumed, or an
// error: the version error of ParseControl (Type 0x2, Code 0x06) if DV is
// not 1; a plain error wrapping ErrNotUntagged if T is set; a *Error of
// TypeLocalCatastrophic wrapping ErrTruncated if b is shorter than the
// header. Reserved bits are not checked (RFC 5041 §4.1).
func ParseUntaggedHeader(b []byte) (UntaggedHeader, int, error) {
	c, _, err := parseControl(b)
	if err != nil {
		return UntaggedHeader{}, 0, err
	}
	if c.Tagged() {
		return UntaggedHeader{}, 0, errNotUntagged
	}
	if len(b) < iwarpwire.DDPUntaggedHeaderLen {
		return UntaggedHeader{}, 0, NewError(iwarp.Term.DDPLocalCatastrophic, errTruncated)
	}
	var h UntaggedHeader
	h.Decode(b)
	return h, iwarpwire.DDPUntaggedHeaderLen, nil
}
