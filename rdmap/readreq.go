package rdmap

import (
	"encoding/binary"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// readRequestLen is the length of the RDMA Read Request Header (RFC 5040
// §4.4 Figure 6).
const readRequestLen = 28

// readRequest is the RDMA Read Request Header (RFC 5040 §4.4), which follows
// the untagged DDP header of a Read Request on QN 1.
type readRequest struct {
	// SinkSTag names the Data Sink's tagged buffer; it is copied into the
	// Read Response without interpretation.
	SinkSTag uint32
	// SinkTO is the Data Sink Tagged Offset.
	SinkTO uint64
	// Size is the RDMA Read Message Size, 0 to 2^32-1 octets.
	Size uint32
	// SrcSTag names the Data Source's tagged buffer.
	SrcSTag uint32
	// SrcTO is the Data Source Tagged Offset.
	SrcTO uint64
}

// parseReadRequest decodes a Read Request Header from the start of b. Every
// bit pattern of the 28 octets is a valid header; STag, bounds and access
// checks (RFC 5040 §7.2) belong to the responder.
func parseReadRequest(b []byte) (readRequest, int, error) {
	if len(b) < readRequestLen {
		return readRequest{}, 0, truncated("RDMA Read Request header", readRequestLen, len(b), iwarp.Term.OperationUnspecified)
	}
	return readRequest{
		SinkSTag: binary.BigEndian.Uint32(b[0:4]),
		SinkTO:   binary.BigEndian.Uint64(b[4:12]),
		Size:     binary.BigEndian.Uint32(b[12:16]),
		SrcSTag:  binary.BigEndian.Uint32(b[16:20]),
		SrcTO:    binary.BigEndian.Uint64(b[20:28]),
	}, readRequestLen, nil
}

// Append appends the encoded header to b; it does not allocate when b has
// readRequestLen octets of spare capacity.
func (r *readRequest) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, r.SinkSTag)
	b = binary.BigEndian.AppendUint64(b, r.SinkTO)
	b = binary.BigEndian.AppendUint32(b, r.Size)
	b = binary.BigEndian.AppendUint32(b, r.SrcSTag)
	return binary.BigEndian.AppendUint64(b, r.SrcTO)
}

// len returns readRequestLen.
func (r *readRequest) len() int { return readRequestLen }

// Advance returns the header updated after n octets of the read were sent,
// as the Terminated RDMA Header of RFC 5040 §4.8 requires: both offsets move
// by n and Size becomes the number of octets left.
func (r readRequest) advance(n uint32) readRequest {
	if n > r.Size {
		n = r.Size
	}
	r.SinkTO += uint64(n)
	r.SrcTO += uint64(n)
	r.Size -= n
	return r
}
