package wire

import "encoding/binary"

// Shutdown is a SHUTDOWN chunk (RFC 9260 §3.3.8): the graceful close of an
// association, acknowledging the peer's DATA up to CumTSNAck.
type Shutdown struct {
	// CumTSNAck is the Cumulative TSN Ack: the last TSN received in
	// sequence.
	CumTSNAck uint32
}

// ShutdownLen is the length of a SHUTDOWN chunk.
const ShutdownLen = 8

// ParseShutdown decodes a SHUTDOWN chunk; shorter than 8 octets is
// ErrChunkLength.
func ParseShutdown(c Chunk) (Shutdown, error) {
	if err := checkType(c, ChunkShutdown); err != nil {
		return Shutdown{}, err
	}
	if len(c.Value) < ShutdownLen-ChunkHeaderLen {
		return Shutdown{}, ErrChunkLength
	}
	return Shutdown{CumTSNAck: binary.BigEndian.Uint32(c.Value)}, nil
}

// Len returns the octets Append writes.
func (s *Shutdown) Len() int { return ShutdownLen }

// Append appends the chunk.
func (s *Shutdown) Append(b []byte) []byte {
	b = appendChunkHeader(b, ChunkShutdown, 0, ShutdownLen)
	return binary.BigEndian.AppendUint32(b, s.CumTSNAck)
}
