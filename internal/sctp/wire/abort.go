package wire

// Abort is an ABORT chunk (RFC 9260 §3.3.7): it ends the association at
// once, and may say why in error causes.
type Abort struct {
	// T is the T bit: the packet carries the peer's own tag reflected
	// rather than the one the peer expects (§8.4, §8.5.1).
	T bool
	// Causes are the error causes, as AppendCause and its kin write them;
	// parsed, they alias the packet. Walk them with Causes.
	Causes []byte
}

// ParseAbort decodes an ABORT chunk. The causes are not checked here: an
// ABORT is acted on whatever its causes hold (RFC 9260 §9.1), and
// CauseIter reports a malformed one to a caller that reads them.
func ParseAbort(c Chunk) (Abort, error) {
	if err := checkType(c, ChunkAbort); err != nil {
		return Abort{}, err
	}
	return Abort{T: c.Flags&FlagT != 0, Causes: c.Value}, nil
}

// CauseIter returns an iterator over the error causes.
func (a *Abort) CauseIter() CauseIter { return NewCauseIter(a.Causes) }

// Len returns the octets Append writes, padding included.
func (a *Abort) Len() int { return padded(ChunkHeaderLen + len(a.Causes)) }

// Append appends the chunk, padded. It panics if the causes are longer
// than MaxChunkLen-4 octets. To write the causes straight into the packet
// instead, use BeginChunk(b, ChunkAbort, flags), the AppendCause
// functions, and EndChunk.
func (a *Abort) Append(b []byte) []byte {
	var f uint8
	if a.T {
		f = FlagT
	}
	return appendCauseChunk(b, ChunkAbort, f, a.Causes)
}

// appendCauseChunk appends a chunk whose value is causes, padded.
func appendCauseChunk(b []byte, t ChunkType, flags uint8, causes []byte) []byte {
	b = appendChunkHeader(b, t, flags, ChunkHeaderLen+len(causes))
	return pad(append(b, causes...))
}
