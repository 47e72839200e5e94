package rdmap

import (
	"encoding/binary"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// atomicResponseLen is the length of the Atomic Operation Response Header
// (RFC 7306 §5.2.2 Figure 6: a 32-bit Original Request Identifier and a
// 64-bit Original Remote Data Value).
const atomicResponseLen = 12

// atomicResponse is the Atomic Operation Response Header (RFC 7306
// §5.2.2), following the untagged DDP header of an Atomic Response on QN 3.
type atomicResponse struct {
	// ReqID is the Original Request Identifier.
	ReqID uint32
	// Orig is the Original Remote Data Value.
	Orig uint64
}

// parseAtomicResponse decodes an Atomic Response Header from the start of b.
func parseAtomicResponse(b []byte) (atomicResponse, int, error) {
	if len(b) < atomicResponseLen {
		return atomicResponse{}, 0, truncated("Atomic Response header", atomicResponseLen, len(b), iwarp.Term.OperationUnspecified)
	}
	return atomicResponse{
		ReqID: binary.BigEndian.Uint32(b[0:4]),
		Orig:  binary.BigEndian.Uint64(b[4:12]),
	}, atomicResponseLen, nil
}

// Append appends the encoded header to b; it does not allocate when b has
// AtomicResponseLen octets of spare capacity.
func (a *atomicResponse) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, a.ReqID)
	return binary.BigEndian.AppendUint64(b, a.Orig)
}

// Len returns AtomicResponseLen.
func (a *atomicResponse) Len() int { return atomicResponseLen }
