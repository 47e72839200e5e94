package mpa

import (
	"encoding/binary"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"

	"github.com/sctp-rdma/sctp-rdma/internal/crc32c"
)

// crcOf returns the CRC32c (Castagnoli) of b as RFC 3720 §12.1 defines it:
// initial value all ones, reflected, final complement. 32 zero octets give
// 0x8A9136AA. The polynomial is RFC 5044 §4.4's ("the CRC32c polynomial in
// the manner described in the iSCSI Protocol"); internal/crc32c computes it
// (hash/crc32's CRC32 instruction, or VPCLMULQDQ folding on long FPDUs).
func crcOf(b []byte) uint32 { return crc32c.Checksum(b) }

// updateCRC32c continues a CRC32c computation over b. Start with crc = 0:
// UpdateCRC32c(UpdateCRC32c(0, a), b) == CRC32c(a+b).
func updateCRC32c(crc uint32, b []byte) uint32 { return crc32c.Update(crc, b) }

// appendCRC appends the 4-octet CRC field holding crc as it travels on the
// wire: least-significant octet first, the iSCSI digest byte order
// (RFC 3720 B.4: the CRC of 32 zero octets, 0x8A9136AA, is sent
// aa 36 91 8a; RFC 5044 §4.4 Figures 5 and 6; Linux siw and Wireshark agree).
// It allocates nothing when b has room for 4 more octets.
func appendCRC(b []byte, crc uint32) []byte { return binary.LittleEndian.AppendUint32(b, crc) }

// parseCRC reads a CRC field from the start of b, returning the value, the
// octets consumed (4) and ErrTruncated if b is shorter than 4 octets.
func parseCRC(b []byte) (uint32, int, error) {
	if len(b) < iwarpwire.MPACRCLen {
		return 0, 0, errTruncated
	}
	return binary.LittleEndian.Uint32(b), iwarpwire.MPACRCLen, nil
}
