package wire

import "encoding/binary"

// tlvHeaderLen is the length of the header of a parameter (RFC 9260
// §3.2.1) or error cause (§3.3.10): a 16-bit type or code and a 16-bit
// length that counts the header and the value, not the padding.
const tlvHeaderLen = 4

// maxTLVValue is the largest value a parameter or cause can carry.
const maxTLVValue = 65535 - tlvHeaderLen

// parseTLV reads the parameter or cause at the start of b. n is the offset
// of the next one: its padding may be missing after the last one of a
// chunk (RFC 9260 §3.2: a receiver accepts a chunk whether or not its
// Chunk Length counts the last parameter's padding).
func parseTLV(b []byte, bad error) (typ uint16, value []byte, n int, err error) {
	if len(b) < tlvHeaderLen {
		return 0, nil, 0, bad
	}
	l := int(binary.BigEndian.Uint16(b[2:]))
	if l < tlvHeaderLen || l > len(b) {
		return 0, nil, 0, bad
	}
	return binary.BigEndian.Uint16(b), b[tlvHeaderLen:l:l], min(padded(l), len(b)), nil
}

// align appends zero octets until len(b) is a multiple of 4: a parameter
// or cause starts aligned, after the padding of the one before it.
func align(b []byte) []byte { return pad(b) }

// appendTLVHeader aligns b and appends the header of a parameter or cause
// with a value of n octets (n <= maxTLVValue). The padding after the value
// is left to whatever is appended next, or to the end of the chunk, so
// that a Chunk Length leaves out the padding of its last parameter
// (RFC 9260 §3.2).
func appendTLVHeader(b []byte, typ uint16, n int) []byte {
	l := tlvHeaderLen + n
	return append(align(b), byte(typ>>8), byte(typ), byte(l>>8), byte(l))
}

// tlvLen is the space a parameter or cause with a value of n octets takes,
// padding included.
func tlvLen(n int) int { return padded(tlvHeaderLen + n) }
