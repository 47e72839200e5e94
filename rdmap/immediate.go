package rdmap

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// immediateLen is the length of the Immediate Data header (RFC 7306 §6.2
// Figure 7).
const immediateLen = 8

// immediate is the Immediate Data header of an Immediate Data or Immediate
// Data with SE message (RFC 7306 §6.2): 8 octets, carried big-endian as a
// 64-bit value.
type immediate struct {
	// Data is the 8 octets of Immediate Data, as a big-endian integer.
	Data uint64
}

// parseImmediate decodes an Immediate Data message body. RFC 7306 §6.3:
// "The Remote Peer MUST check that Immediate Data ... Messages include
// exactly 8 bytes of data", so any other length is an error; this
// implementation reports it as a Remote Operation Error, Unspecified Error.
func parseImmediate(b []byte) (immediate, int, error) {
	if len(b) != immediateLen {
		return immediate{}, 0, &protocolError{Code: iwarp.Term.OperationUnspecified,
			Reason: fmt.Sprintf("immediate data of %d octets, want exactly %d (RFC 7306 §6.3)", len(b), immediateLen)}
	}
	return immediate{Data: binary.BigEndian.Uint64(b)}, immediateLen, nil
}

// Append appends the 8 octets to b; it does not allocate when b has
// ImmediateLen octets of spare capacity.
func (i *immediate) Append(b []byte) []byte { return binary.BigEndian.AppendUint64(b, i.Data) }

// Len returns ImmediateLen.
func (i *immediate) Len() int { return immediateLen }
