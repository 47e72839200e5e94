package pmtu

import (
	"encoding/binary"
	"hash/crc32"
)

// CommonHeader is the SCTP common header (RFC 4960 §3.1):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     Source Port Number        |     Destination Port Number   |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                      Verification Tag                         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                           Checksum                            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type CommonHeader struct {
	SrcPort, DstPort uint16
	VerificationTag  uint32
	// Checksum is the CRC32c as stored on the wire (RFC 4960 Appendix B:
	// the reflected CRC, least-significant octet first).
	Checksum uint32
}

// ParseCommonHeader parses the 12-octet common header at the start of b.
func ParseCommonHeader(b []byte) (CommonHeader, int, error) {
	if len(b) < SCTPCommonHeaderLen {
		return CommonHeader{}, 0, &WireError{What: "common header", Section: "RFC 4960 §3.1", Reason: "shorter than 12 octets", Err: ErrShort}
	}
	return CommonHeader{
		SrcPort:         binary.BigEndian.Uint16(b[0:]),
		DstPort:         binary.BigEndian.Uint16(b[2:]),
		VerificationTag: binary.BigEndian.Uint32(b[4:]),
		Checksum:        binary.LittleEndian.Uint32(b[8:]),
	}, SCTPCommonHeaderLen, nil
}

// Len returns 12.
func (h CommonHeader) Len() int { return SCTPCommonHeaderLen }

// Append appends the header as it is (Checksum included); use SetChecksum
// once the whole packet is built.
func (h CommonHeader) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, h.SrcPort)
	b = binary.BigEndian.AppendUint16(b, h.DstPort)
	b = binary.BigEndian.AppendUint32(b, h.VerificationTag)
	return binary.LittleEndian.AppendUint32(b, h.Checksum)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var zeroCRC [4]byte

// PacketChecksum computes the CRC32c of an SCTP packet with its checksum
// field taken as zero (RFC 4960 §6.8, Appendix B).
func PacketChecksum(pkt []byte) uint32 {
	if len(pkt) < SCTPCommonHeaderLen {
		return 0
	}
	c := crc32.Update(0, castagnoli, pkt[:8])
	c = crc32.Update(c, castagnoli, zeroCRC[:])
	return crc32.Update(c, castagnoli, pkt[SCTPCommonHeaderLen:])
}

// SetChecksum stores the packet's CRC32c in its common header.
func SetChecksum(pkt []byte) {
	if len(pkt) >= SCTPCommonHeaderLen {
		binary.LittleEndian.PutUint32(pkt[8:], PacketChecksum(pkt))
	}
}

// ChecksumOK reports whether the packet's checksum is right. A zero
// checksum is accepted as RFC 9653 (zero checksum) allows on
// DTLS-protected or otherwise checked paths, as pion does.
func ChecksumOK(pkt []byte) bool {
	if len(pkt) < SCTPCommonHeaderLen {
		return false
	}
	got := binary.LittleEndian.Uint32(pkt[8:])
	return got == 0 || got == PacketChecksum(pkt)
}
