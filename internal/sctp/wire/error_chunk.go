package wire

// ErrorChunk is an ERROR chunk (RFC 9260 §3.3.10): conditions that do not
// end the association, as error causes.
type ErrorChunk struct {
	// Causes are the error causes, as AppendCause and its kin write them;
	// parsed, they alias the packet. Walk them with CauseIter.
	Causes []byte
}

// ParseError decodes an ERROR chunk. As for ABORT, the causes are only
// checked by CauseIter.
func ParseError(c Chunk) (ErrorChunk, error) {
	if err := checkType(c, ChunkError); err != nil {
		return ErrorChunk{}, err
	}
	return ErrorChunk{Causes: c.Value}, nil
}

// CauseIter returns an iterator over the error causes.
func (e *ErrorChunk) CauseIter() CauseIter { return NewCauseIter(e.Causes) }

// Len returns the octets Append writes, padding included.
func (e *ErrorChunk) Len() int { return padded(ChunkHeaderLen + len(e.Causes)) }

// Append appends the chunk, padded; it panics if the causes are longer
// than MaxChunkLen-4 octets. BeginChunk(b, ChunkError, 0), the
// AppendCause functions and EndChunk write one in place.
func (e *ErrorChunk) Append(b []byte) []byte {
	return appendCauseChunk(b, ChunkError, 0, e.Causes)
}
