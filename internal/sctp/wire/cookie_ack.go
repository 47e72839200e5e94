package wire

// CookieAck is a COOKIE ACK chunk (RFC 9260 §3.3.12): the association is
// established. It has no value.
type CookieAck struct{}

// ParseCookieAck decodes a COOKIE ACK chunk; a value is ignored.
func ParseCookieAck(c Chunk) (CookieAck, error) {
	return CookieAck{}, checkType(c, ChunkCookieAck)
}

// Len returns the octets Append writes.
func (CookieAck) Len() int { return ChunkHeaderLen }

// Append appends the chunk.
func (CookieAck) Append(b []byte) []byte {
	return appendChunkHeader(b, ChunkCookieAck, 0, ChunkHeaderLen)
}
