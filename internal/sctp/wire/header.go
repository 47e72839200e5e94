package wire

import "encoding/binary"

// HeaderLen is the length of the SCTP common header (RFC 9260 §3.1).
const HeaderLen = 12

// Header is the SCTP common header (RFC 9260 §3.1). The checksum is not a
// field: SetChecksum fills it once the packet is complete and
// ParsePacket checks it.
type Header struct {
	// SrcPort and DstPort are the SCTP port numbers. Over UDP (RFC 6951)
	// they are still carried; this project uses 5000 on both ends.
	SrcPort, DstPort uint16
	// VerificationTag is the receiver's Initiate Tag, or 0 in a packet
	// carrying an INIT (§8.5, §8.5.1).
	VerificationTag uint32
}

// ParseHeader reads the common header at the start of b without checking
// the checksum.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, ErrTruncated
	}
	return Header{
		SrcPort:         binary.BigEndian.Uint16(b),
		DstPort:         binary.BigEndian.Uint16(b[2:]),
		VerificationTag: binary.BigEndian.Uint32(b[4:]),
	}, nil
}

// AppendHeader appends the common header with a zero Checksum field; call
// SetChecksum when the chunks are in.
func AppendHeader(b []byte, h Header) []byte {
	b = binary.BigEndian.AppendUint16(b, h.SrcPort)
	b = binary.BigEndian.AppendUint16(b, h.DstPort)
	b = binary.BigEndian.AppendUint32(b, h.VerificationTag)
	return append(b, 0, 0, 0, 0)
}
