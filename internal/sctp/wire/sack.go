package wire

import "encoding/binary"

// SACKHeaderLen is the length of a SACK chunk without Gap Ack Blocks and
// Duplicate TSNs (RFC 9260 §3.3.4).
const SACKHeaderLen = 16

// GapAckBlock is one Gap Ack Block of a SACK (RFC 9260 §3.3.4): the TSNs
// from Cumulative TSN Ack + Start to Cumulative TSN Ack + End, both
// included, were received.
type GapAckBlock struct {
	Start, End uint16
}

// SACK is a Selective Acknowledgement chunk (RFC 9260 §3.3.4).
type SACK struct {
	// CumTSNAck is the Cumulative TSN Ack: the last TSN received in
	// sequence.
	CumTSNAck uint32
	// ARwnd is the Advertised Receiver Window Credit, in octets.
	ARwnd uint32
	// Gaps are the Gap Ack Blocks, in the order of the chunk.
	Gaps []GapAckBlock
	// Dups are the Duplicate TSNs received since the previous SACK.
	Dups []uint32
}

// ParseSACK decodes a SACK chunk. The Gap Ack Blocks and Duplicate TSNs
// are appended to gaps[:0] and dups[:0], whose storage is reused: nothing
// is allocated when their capacity suffices. The blocks are taken as
// sent; their consistency (Start <= End, ascending, within what was sent)
// is for the sender's SACK processing to judge (RFC 9260 §6.2.1). The
// chunk must be long enough for the counts it announces (ErrChunkLength);
// octets beyond them are ignored.
func ParseSACK(c Chunk, gaps []GapAckBlock, dups []uint32) (SACK, error) {
	if err := checkType(c, ChunkSACK); err != nil {
		return SACK{}, err
	}
	v := c.Value
	if len(v) < SACKHeaderLen-ChunkHeaderLen {
		return SACK{}, ErrChunkLength
	}
	nGaps := int(binary.BigEndian.Uint16(v[8:]))
	nDups := int(binary.BigEndian.Uint16(v[10:]))
	v = v[12:]
	if len(v) < 4*(nGaps+nDups) {
		return SACK{}, ErrChunkLength
	}
	s := SACK{
		CumTSNAck: binary.BigEndian.Uint32(c.Value),
		ARwnd:     binary.BigEndian.Uint32(c.Value[4:]),
		Gaps:      gaps[:0],
		Dups:      dups[:0],
	}
	for i := 0; i < nGaps; i++ {
		s.Gaps = append(s.Gaps, GapAckBlock{
			Start: binary.BigEndian.Uint16(v[4*i:]),
			End:   binary.BigEndian.Uint16(v[4*i+2:]),
		})
	}
	v = v[4*nGaps:]
	for i := 0; i < nDups; i++ {
		s.Dups = append(s.Dups, binary.BigEndian.Uint32(v[4*i:]))
	}
	return s, nil
}

// MaxSACKEntries is the most Gap Ack Blocks and Duplicate TSNs, together,
// that one SACK chunk can carry.
const MaxSACKEntries = (MaxChunkLen - SACKHeaderLen) / 4

// Len returns the octets Append writes (a SACK needs no padding).
func (s *SACK) Len() int { return SACKHeaderLen + 4*(len(s.Gaps)+len(s.Dups)) }

// Append appends the SACK chunk. It panics if the blocks and duplicates
// are more than MaxSACKEntries, or either more than 65535: the caller
// caps them to what the packet has room for.
func (s *SACK) Append(b []byte) []byte {
	if len(s.Gaps) > 65535 || len(s.Dups) > 65535 {
		panic("internal/sctp/wire: more than 65535 gap ack blocks or duplicate TSNs")
	}
	b = appendChunkHeader(b, ChunkSACK, 0, s.Len())
	b = binary.BigEndian.AppendUint32(b, s.CumTSNAck)
	b = binary.BigEndian.AppendUint32(b, s.ARwnd)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Gaps)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Dups)))
	for _, g := range s.Gaps {
		b = binary.BigEndian.AppendUint16(b, g.Start)
		b = binary.BigEndian.AppendUint16(b, g.End)
	}
	for _, d := range s.Dups {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return b
}
