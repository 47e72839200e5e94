package ddpchunk

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/pmtu"
)

// Segment is the payload of a DDP Segment Chunk, PPID 16
// (RFC 5043 §5.2.2):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          DDP-SSN              |         DDP Segment           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               |
//	|                         ...                                   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type Segment struct {
	// SSN is the DDP Source Sequence Number (RFC 5043 §5.2.1).
	SSN uint16
	// Segment is the DDP segment (RFC 5041 header and ULP payload). After
	// ParseSegment it aliases the parsed buffer.
	Segment []byte
}

// ParseSegment parses a DDP Segment Chunk payload. The returned
// Segment aliases b; the chunk is all of b, so the octets consumed are
// len(b). The DDP segment itself is not interpreted here (that is the DDP
// layer's job); an empty segment is accepted by the parser and rejected by
// the DDP receiver.
func ParseSegment(b []byte) (Segment, int, error) {
	if len(b) < pmtu.DDPSSNLen {
		return Segment{}, 0, fmt.Errorf("%w: DDP segment chunk of %d octets", ErrTruncated, len(b))
	}
	return Segment{SSN: binary.BigEndian.Uint16(b), Segment: b[pmtu.DDPSSNLen:]}, len(b), nil
}

// Len returns the encoded length of the chunk payload.
func (c Segment) Len() int { return pmtu.DDPSSNLen + len(c.Segment) }

// Append appends the encoded chunk payload to b. It allocates nothing when b
// has capacity for Len more octets.
func (c Segment) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, c.SSN)
	return append(b, c.Segment...)
}
