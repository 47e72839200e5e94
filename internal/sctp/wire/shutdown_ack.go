package wire

// ShutdownAck is a SHUTDOWN ACK chunk (RFC 9260 §3.3.9): the answer to a
// SHUTDOWN once all outstanding DATA is acknowledged. It has no value.
type ShutdownAck struct{}

// ParseShutdownAck decodes a SHUTDOWN ACK chunk; a value, which it should
// not have, is ignored.
func ParseShutdownAck(c Chunk) (ShutdownAck, error) {
	return ShutdownAck{}, checkType(c, ChunkShutdownAck)
}

// Len returns the octets Append writes.
func (ShutdownAck) Len() int { return ChunkHeaderLen }

// Append appends the chunk.
func (ShutdownAck) Append(b []byte) []byte {
	return appendChunkHeader(b, ChunkShutdownAck, 0, ChunkHeaderLen)
}
