package rdmap

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// ImmediateLen is the length of the Immediate Data header (RFC 7306 §6.2
// Figure 7).
const ImmediateLen = 8

// Immediate is the Immediate Data header of an Immediate Data or Immediate
// Data with SE message (RFC 7306 §6.2): 8 octets, carried big-endian as a
// 64-bit value.
type Immediate struct {
	// Data is the 8 octets of Immediate Data, as a big-endian integer.
	Data uint64
}

// ParseImmediate decodes an Immediate Data message body. RFC 7306 §6.3:
// "The Remote Peer MUST check that Immediate Data ... Messages include
// exactly 8 bytes of data", so any other length is an error; this
// implementation reports it as a Remote Operation Error, Unspecified Error.
func ParseImmediate(b []byte) (Immediate, int, error) {
	if len(b) != ImmediateLen {
		return Immediate{}, 0, &ProtocolError{Code: iwarp.TermOperationUnspecified,
			Reason: fmt.Sprintf("immediate data of %d octets, want exactly %d (RFC 7306 §6.3)", len(b), ImmediateLen)}
	}
	return Immediate{Data: binary.BigEndian.Uint64(b)}, ImmediateLen, nil
}

// Append appends the 8 octets to b; it does not allocate when b has
// ImmediateLen octets of spare capacity.
func (i *Immediate) Append(b []byte) []byte { return binary.BigEndian.AppendUint64(b, i.Data) }

// Len returns ImmediateLen.
func (i *Immediate) Len() int { return ImmediateLen }
