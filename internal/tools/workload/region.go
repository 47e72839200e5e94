package workload

import (
	"encoding/binary"
	"fmt"
)

// Region is the answer to "where is your buffer": the STag of a region
// the peer registered, the Tagged Offset of its first octet and its
// length (RFC 5040 leaves this exchange to the ULP). Its encoding is the
// one every tool of the module uses (workload, bench, e2e/faults) and the
// README's example reads: RegionLen octets, big-endian.
//
//	0      4             12                20
//	| STag | TO (64 bits) | Length (64 bits) |
type Region struct {
	STag   uint32
	TO     uint64
	Length uint64
}

// RegionLen is the length of an encoded Region.
const RegionLen = 20

// Append appends r's encoding to b; it allocates nothing when b has
// RegionLen octets of spare capacity.
func (r Region) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, r.STag)
	b = binary.BigEndian.AppendUint64(b, r.TO)
	return binary.BigEndian.AppendUint64(b, r.Length)
}

// ParseRegion decodes the Region at the start of b.
func ParseRegion(b []byte) (Region, error) {
	if len(b) < RegionLen {
		return Region{}, fmt.Errorf("region of %d octets, want %d", len(b), RegionLen)
	}
	return Region{STag: binary.BigEndian.Uint32(b), TO: binary.BigEndian.Uint64(b[4:]), Length: binary.BigEndian.Uint64(b[12:])}, nil
}
