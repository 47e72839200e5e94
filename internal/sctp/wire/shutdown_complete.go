package wire

// ShutdownComplete is a SHUTDOWN COMPLETE chunk (RFC 9260 §3.3.13): the
// end of the graceful close. It has no value.
type ShutdownComplete struct {
	// T is the T bit: the packet carries the peer's own tag reflected
	// (§8.5.1 C, answering a SHUTDOWN ACK for an unknown association).
	T bool
}

// ParseShutdownComplete decodes a SHUTDOWN COMPLETE chunk; a value is
// ignored.
func ParseShutdownComplete(c Chunk) (ShutdownComplete, error) {
	if err := checkType(c, ChunkShutdownComplete); err != nil {
		return ShutdownComplete{}, err
	}
	return ShutdownComplete{T: c.Flags&FlagT != 0}, nil
}

// Len returns the octets Append writes.
func (ShutdownComplete) Len() int { return ChunkHeaderLen }

// Append appends the chunk.
func (s ShutdownComplete) Append(b []byte) []byte {
	var f uint8
	if s.T {
		f = FlagT
	}
	return appendChunkHeader(b, ChunkShutdownComplete, f, ChunkHeaderLen)
}
