package pmtu

import (
	"encoding/binary"
	"fmt"
)

// SCTP chunk types this package looks at (RFC 4960 §3.2).
const (
	ChunkData         uint8 = 0
	ChunkInit         uint8 = 1
	ChunkInitAck      uint8 = 2
	ChunkHeartbeat    uint8 = 4
	ChunkHeartbeatAck uint8 = 5
	ChunkShutdownComp uint8 = 14
)

// ChunkHeader is the header every SCTP chunk starts with (RFC 4960 §3.2):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Chunk Type  | Chunk  Flags  |        Chunk Length           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Length counts the header and the value, not the padding to 4 octets.
type ChunkHeader struct {
	Type, Flags uint8
	Length      uint16
}

// ChunkHeaderLen is the size of a chunk header.
const ChunkHeaderLen = 4

// ParseChunkHeader parses the chunk header at the start of b and checks
// that the chunk, padded to 4 octets, fits in b. It returns the padded
// size of the whole chunk as the octets consumed.
func ParseChunkHeader(b []byte) (ChunkHeader, int, error) {
	if len(b) < ChunkHeaderLen {
		return ChunkHeader{}, 0, &WireError{What: "chunk", Section: "RFC 4960 §3.2", Reason: "shorter than a chunk header", Err: ErrShort}
	}
	h := ChunkHeader{Type: b[0], Flags: b[1], Length: binary.BigEndian.Uint16(b[2:])}
	if h.Length < ChunkHeaderLen {
		return ChunkHeader{}, 0, &WireError{What: "chunk", Section: "RFC 4960 §3.2", Reason: fmt.Sprintf("length %d below 4", h.Length)}
	}
	padded := (int(h.Length) + 3) &^ 3
	if padded > len(b) {
		// The last chunk's padding may be missing only if the sender
		// omitted it; RFC 4960 §3.2 requires it, so treat as truncated.
		return ChunkHeader{}, 0, &WireError{What: "chunk", Section: "RFC 4960 §3.2", Reason: fmt.Sprintf("chunk of %d octets in %d", padded, len(b)), Err: ErrShort}
	}
	return h, padded, nil
}

// Len returns 4.
func (h ChunkHeader) Len() int { return ChunkHeaderLen }

// Append appends the 4-octet header.
func (h ChunkHeader) Append(b []byte) []byte {
	b = append(b, h.Type, h.Flags)
	return binary.BigEndian.AppendUint16(b, h.Length)
}

// unbundleable reports chunk types that must be alone in a packet
// (RFC 4960 §6.10: INIT, INIT ACK, SHUTDOWN COMPLETE).
func unbundleable(t uint8) bool {
	return t == ChunkInit || t == ChunkInitAck || t == ChunkShutdownComp
}

// SplitPacket cuts an SCTP packet into packets of at most limit octets,
// keeping the chunks in their order (RFC 4960 §6.10: a receiver processes
// the chunks of a packet in order, and any bundling that respects the
// rules is valid) and giving every piece the original common header with a
// fresh CRC32c. Each piece is passed to emit, which must not retain it;
// buf is scratch space (grown as needed and returned for reuse).
// oversize reports, for each piece, whether it is a single chunk still
// larger than limit (it cannot be cut: SCTP fixed its TSN). A packet that
// does not parse is emitted unchanged as one oversize piece.
func SplitPacket(pkt []byte, limit int, buf []byte, emit func(piece []byte, oversize bool) error) ([]byte, error) {
	if len(pkt) <= limit {
		return buf, emit(pkt, false)
	}
	if len(pkt) < SCTPCommonHeaderLen || !wellFormed(pkt[SCTPCommonHeaderLen:]) {
		return buf, emit(pkt, true)
	}
	hdr := pkt[:SCTPCommonHeaderLen]
	rest := pkt[SCTPCommonHeaderLen:]
	buf = append(buf[:0], hdr...)
	flush := func() error {
		if len(buf) == SCTPCommonHeaderLen {
			return nil
		}
		SetChecksum(buf)
		err := emit(buf, len(buf) > limit)
		buf = append(buf[:0], hdr...)
		return err
	}
	for len(rest) > 0 {
		_, n, _ := ParseChunkHeader(rest) // wellFormed checked it
		if len(buf)+n > limit {
			if err := flush(); err != nil {
				return buf, err
			}
		}
		buf = append(buf, rest[:n]...)
		rest = rest[n:]
	}
	return buf, flush()
}

func wellFormed(chunks []byte) bool {
	for len(chunks) > 0 {
		h, n, err := ParseChunkHeader(chunks)
		if err != nil || unbundleable(h.Type) {
			return false
		}
		chunks = chunks[n:]
	}
	return true
}

// DataTSNs calls fn with the TSN of every DATA chunk of a well-formed
// packet (RFC 4960 §3.3.1). Malformed packets are ignored.
func DataTSNs(pkt []byte, fn func(tsn uint32)) {
	if len(pkt) < SCTPCommonHeaderLen {
		return
	}
	rest := pkt[SCTPCommonHeaderLen:]
	for len(rest) > 0 {
		h, n, err := ParseChunkHeader(rest)
		if err != nil {
			return
		}
		if h.Type == ChunkData && h.Length >= DataChunkHeaderLen {
			fn(binary.BigEndian.Uint32(rest[4:]))
		}
		rest = rest[n:]
	}
}
