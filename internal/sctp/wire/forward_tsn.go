package wire

import "encoding/binary"

// ForwardTSNStream is one stream entry of a FORWARD TSN chunk: the largest
// SSN of an ordered message of the stream that was skipped.
type ForwardTSNStream struct {
	StreamID, SSN uint16
}

// ForwardTSN is a FORWARD TSN chunk (RFC 3758 §3.2): the receiver moves
// its Cumulative TSN Ack point to NewCumTSN, treating the skipped TSNs as
// received. It is sent only to a peer that announced
// Forward-TSN-Supported.
type ForwardTSN struct {
	// NewCumTSN is the New Cumulative TSN.
	NewCumTSN uint32
	// Streams are the ordered streams whose messages were skipped.
	Streams []ForwardTSNStream
}

// ParseForwardTSN decodes a FORWARD TSN chunk, appending its stream
// entries to streams[:0], whose storage is reused. A value that is not
// 4 octets plus whole entries is ErrChunkLength.
func ParseForwardTSN(c Chunk, streams []ForwardTSNStream) (ForwardTSN, error) {
	if err := checkType(c, ChunkForwardTSN); err != nil {
		return ForwardTSN{}, err
	}
	v := c.Value
	if len(v) < 4 || len(v)%4 != 0 {
		return ForwardTSN{}, ErrChunkLength
	}
	f := ForwardTSN{NewCumTSN: binary.BigEndian.Uint32(v), Streams: streams[:0]}
	for v = v[4:]; len(v) >= 4; v = v[4:] {
		f.Streams = append(f.Streams, ForwardTSNStream{
			StreamID: binary.BigEndian.Uint16(v),
			SSN:      binary.BigEndian.Uint16(v[2:]),
		})
	}
	return f, nil
}

// Len returns the octets Append writes.
func (f *ForwardTSN) Len() int { return ChunkHeaderLen + 4 + 4*len(f.Streams) }

// Append appends the chunk; it panics if the streams do not fit a chunk.
func (f *ForwardTSN) Append(b []byte) []byte {
	b = appendChunkHeader(b, ChunkForwardTSN, 0, f.Len())
	b = binary.BigEndian.AppendUint32(b, f.NewCumTSN)
	for _, s := range f.Streams {
		b = binary.BigEndian.AppendUint16(b, s.StreamID)
		b = binary.BigEndian.AppendUint16(b, s.SSN)
	}
	return b
}
