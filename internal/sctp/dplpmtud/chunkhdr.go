package dplpmtud

import (
	"encoding/binary"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// The SCTP packet and chunk layouts are package internal/sctp/wire's; this file
// holds what path MTU tracking does with them.

// unbundleable reports chunk types that must be alone in a packet
// (RFC 9260 §6.10: INIT, INIT ACK, SHUTDOWN COMPLETE).
func unbundleable(t wire.ChunkType) bool {
	return t == wire.ChunkInit || t == wire.ChunkInitAck || t == wire.ChunkShutdownComplete
}

// splitPacket cuts an SCTP packet into packets of at most limit octets,
// keeping the chunks in their order (RFC 9260 §6.10: a receiver processes
// the chunks of a packet in order, and any bundling that respects the
// rules is valid) and giving every piece the original common header with a
// fresh CRC32c. Each piece is passed to emit, which must not retain it;
// buf is scratch space (grown as needed and returned for reuse).
// oversize reports, for each piece, whether it is a single chunk still
// larger than limit (it cannot be cut: SCTP fixed its TSN). A packet that
// does not parse is emitted unchanged as one oversize piece.
func splitPacket(pkt []byte, limit int, buf []byte, emit func(piece []byte, oversize bool) error) ([]byte, error) {
	if len(pkt) <= limit {
		return buf, emit(pkt, false)
	}
	if len(pkt) <= wire.HeaderLen || !wellFormed(pkt[wire.HeaderLen:]) {
		// Nothing to split (no chunk, or chunks that must stay as they
		// are): the packet goes whole, flagged, a bare common header too
		// (FuzzSplitPacket).
		return buf, emit(pkt, true)
	}
	hdr := pkt[:wire.HeaderLen]
	rest := pkt[wire.HeaderLen:]
	buf = append(buf[:0], hdr...)
	flush := func() error {
		if len(buf) == wire.HeaderLen {
			return nil
		}
		wire.SetChecksum(buf)
		err := emit(buf, len(buf) > limit)
		buf = append(buf[:0], hdr...)
		return err
	}
	for len(rest) > 0 {
		_, n, _ := wire.ParseChunk(rest) // wellFormed checked it
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

// wellFormed reports whether chunks parse, each padded to 4 octets (RFC
// 9260 §3.2), and none must be alone in its packet.
func wellFormed(chunks []byte) bool {
	for len(chunks) > 0 {
		c, n, err := wire.ParseChunk(chunks)
		if err != nil || n%4 != 0 || unbundleable(c.Type) {
			return false
		}
		chunks = chunks[n:]
	}
	return true
}

// dataTSNs calls fn with the TSN of every DATA chunk of a packet (RFC 9260
// §3.3.1), up to the first malformed chunk.
func dataTSNs(pkt []byte, fn func(tsn uint32)) {
	if len(pkt) < wire.HeaderLen {
		return
	}
	it := wire.NewChunkIter(pkt[wire.HeaderLen:])
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		if c.Type == wire.ChunkData && len(c.Value) >= wire.DataHeaderLen-wire.ChunkHeaderLen {
			fn(binary.BigEndian.Uint32(c.Value))
		}
	}
}
