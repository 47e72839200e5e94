package wire

import (
	"encoding/binary"

	"github.com/sctp-rdma/sctp-rdma/internal/crc32c"
)

// The CRC32c of RFC 9260 Appendix B is internal/crc32c's: hash/crc32's
// CRC32 instruction, or VPCLMULQDQ folding on long packets.

var zeroChecksum [4]byte

// Checksum returns the CRC32c of an SCTP packet computed with its Checksum
// field taken as zero (RFC 9260 §6.8, Appendix B), without modifying the
// packet. A packet shorter than the common header has no checksum: 0.
func Checksum(pkt []byte) uint32 {
	if len(pkt) < HeaderLen {
		return 0
	}
	c := crc32c.Update(0, pkt[:8])
	c = crc32c.Update(c, zeroChecksum[:])
	return crc32c.Update(c, pkt[HeaderLen:])
}

// SetChecksum computes the packet's CRC32c and stores it in the common
// header. The CRC is stored least significant octet first: RFC 9260
// Appendix B's reflected CRC, as Linux, pion and Wireshark put it on the
// wire.
func SetChecksum(pkt []byte) {
	if len(pkt) < HeaderLen {
		return
	}
	clear(pkt[8:HeaderLen])
	binary.LittleEndian.PutUint32(pkt[8:], crc32c.Update(0, pkt))
}

// SetChecksumTail is SetChecksum for a packet whose octets from head on
// have the CRC32c tailCRC, taken when they were written (while the data
// was copied in, still in the cache); shift is crc32c.Shift of their
// length. Only the first head octets are read.
func SetChecksumTail(pkt []byte, head int, tailCRC, shift uint32) {
	clear(pkt[8:HeaderLen])
	c := crc32c.CombineShift(crc32c.Update(0, pkt[:head]), tailCRC, shift)
	binary.LittleEndian.PutUint32(pkt[8:], c)
}

// ChecksumOK reports whether the packet's Checksum field holds its CRC32c.
// RFC 9260 §6.8: a packet with a bad checksum is discarded silently. A
// zero checksum is not accepted: this package never negotiates RFC 9653.
func ChecksumOK(pkt []byte) bool {
	return len(pkt) >= HeaderLen && binary.LittleEndian.Uint32(pkt[8:]) == Checksum(pkt)
}

// TailShift is crc32c.Shift(n) for one length n as tables: moving a CRC
// past n octets is a multiplication modulo the polynomial, linear in the
// CRC, so four tables of 256 entries (one per octet of the CRC) replace
// crc32c.CombineShift's bit-by-bit multiplication, which cost more per
// packet than checksumming the packet's headers. Building one costs 32 of
// those multiplications: worth it for a length that repeats.
type TailShift struct {
	n int
	t [4][256]uint32
}

// Reset makes s the shift past n octets (n >= 0).
func (s *TailShift) Reset(n int) {
	sh := crc32c.Shift(n)
	s.n = n
	for k := range s.t {
		t := &s.t[k]
		t[0] = 0
		for j := 0; j < 8; j++ {
			t[1<<j] = crc32c.CombineShift(1<<(8*k+j), 0, sh)
		}
		for i := 3; i < 256; i++ {
			if low := i & -i; low != i {
				t[i] = t[low] ^ t[i^low]
			}
		}
	}
}

// Len is the length s shifts past.
func (s *TailShift) Len() int { return s.n }

// apply returns crc moved past s.Len() octets of zeros.
func (s *TailShift) apply(crc uint32) uint32 {
	return s.t[0][byte(crc)] ^ s.t[1][byte(crc>>8)] ^ s.t[2][byte(crc>>16)] ^ s.t[3][crc>>24]
}

// SetChecksumTailShift is SetChecksumTail with the shift as tables; s.Len()
// is len(pkt)-head.
func SetChecksumTailShift(pkt []byte, head int, tailCRC uint32, s *TailShift) {
	clear(pkt[8:HeaderLen])
	c := s.apply(crc32c.Update(0, pkt[:head])) ^ tailCRC
	binary.LittleEndian.PutUint32(pkt[8:], c)
}

// ZeroChecksumOK reports whether a receiver that announced Zero Checksum
// Acceptable (RFC 9653 §5.3) takes pkt without a CRC32c: its Checksum
// field is zero and it is not one that always carries the CRC32c
// (ChecksumRequired). A packet with a non-zero checksum is checked as
// ever (ChecksumOK).
func ZeroChecksumOK(pkt []byte) bool {
	return len(pkt) >= HeaderLen+ChunkHeaderLen && binary.LittleEndian.Uint32(pkt[8:]) == 0 && !ChecksumRequired(pkt)
}

// ChecksumRequired reports whether pkt carries the CRC32c even between
// ends that accept a zero checksum: a packet that starts with an INIT or
// a COOKIE ECHO (RFC 9653 §5.2; an INIT is alone in its packet and a
// COOKIE ECHO comes first, RFC 9260 §6.10). A packet without a chunk
// counts as one.
func ChecksumRequired(pkt []byte) bool {
	if len(pkt) < HeaderLen+ChunkHeaderLen {
		return true
	}
	t := ChunkType(pkt[HeaderLen])
	return t == ChunkInit || t == ChunkCookieEcho
}

// SetZeroChecksum clears the Checksum field, for a packet to a peer that
// accepts a zero checksum (RFC 9653 §5.2) that ChecksumRequired does not
// hold for.
func SetZeroChecksum(pkt []byte) {
	if len(pkt) >= HeaderLen {
		clear(pkt[8:HeaderLen])
	}
}
