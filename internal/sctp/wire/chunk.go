package wire

import (
	"encoding/binary"
	"strconv"
)

// ChunkType is the Chunk Type field of a chunk (RFC 9260 §3.2; IANA "Chunk
// Types" registry).
type ChunkType uint8

// Chunk types. The package parses those it has a type for; the others are
// named so that logs can print them.
const (
	ChunkData             ChunkType = 0   // RFC 9260 §3.3.1
	ChunkInit             ChunkType = 1   // RFC 9260 §3.3.2
	ChunkInitAck          ChunkType = 2   // RFC 9260 §3.3.3
	ChunkSACK             ChunkType = 3   // RFC 9260 §3.3.4
	ChunkHeartbeat        ChunkType = 4   // RFC 9260 §3.3.5
	ChunkHeartbeatAck     ChunkType = 5   // RFC 9260 §3.3.6
	ChunkAbort            ChunkType = 6   // RFC 9260 §3.3.7
	ChunkShutdown         ChunkType = 7   // RFC 9260 §3.3.8
	ChunkShutdownAck      ChunkType = 8   // RFC 9260 §3.3.9
	ChunkError            ChunkType = 9   // RFC 9260 §3.3.10
	ChunkCookieEcho       ChunkType = 10  // RFC 9260 §3.3.11
	ChunkCookieAck        ChunkType = 11  // RFC 9260 §3.3.12
	ChunkECNE             ChunkType = 12  // RFC 9260 Appendix A (not parsed)
	ChunkCWR              ChunkType = 13  // RFC 9260 Appendix A (not parsed)
	ChunkShutdownComplete ChunkType = 14  // RFC 9260 §3.3.13
	ChunkAuth             ChunkType = 15  // RFC 4895 (not parsed)
	ChunkIData            ChunkType = 64  // RFC 8260 (not parsed)
	ChunkASCONFAck        ChunkType = 128 // RFC 5061 (not parsed)
	ChunkReconfig         ChunkType = 130 // RFC 6525 (not parsed)
	ChunkPad              ChunkType = 132 // RFC 4820 (not parsed)
	ChunkForwardTSN       ChunkType = 192 // RFC 3758 §3.2
	ChunkASCONF           ChunkType = 193 // RFC 5061 (not parsed)
	ChunkIForwardTSN      ChunkType = 194 // RFC 8260 (not parsed)
)

var chunkNames = map[ChunkType]string{
	ChunkData: "DATA", ChunkInit: "INIT", ChunkInitAck: "INIT ACK", ChunkSACK: "SACK",
	ChunkHeartbeat: "HEARTBEAT", ChunkHeartbeatAck: "HEARTBEAT ACK", ChunkAbort: "ABORT",
	ChunkShutdown: "SHUTDOWN", ChunkShutdownAck: "SHUTDOWN ACK", ChunkError: "ERROR",
	ChunkCookieEcho: "COOKIE ECHO", ChunkCookieAck: "COOKIE ACK", ChunkECNE: "ECNE",
	ChunkCWR: "CWR", ChunkShutdownComplete: "SHUTDOWN COMPLETE", ChunkAuth: "AUTH",
	ChunkIData: "I-DATA", ChunkASCONFAck: "ASCONF-ACK", ChunkReconfig: "RE-CONFIG",
	ChunkPad: "PAD", ChunkForwardTSN: "FORWARD TSN", ChunkASCONF: "ASCONF",
	ChunkIForwardTSN: "I-FORWARD-TSN",
}

// String returns the chunk type's name as RFC 9260 spells it, or its
// number.
func (t ChunkType) String() string {
	if s, ok := chunkNames[t]; ok {
		return s
	}
	return "chunk type " + strconv.Itoa(int(t))
}

// Action returns what RFC 9260 §3.2 asks of an endpoint that does not
// recognize a chunk of this type, coded in the type's two highest bits.
func (t ChunkType) Action() Action { return Action(t >> 6) }

// Action is what a receiver does with a chunk type or parameter type it
// does not recognize: the two highest bits of the type (RFC 9260 §3.2 for
// chunks, §3.2.1 for parameters).
type Action uint8

const (
	// ActionStop (00): for a chunk, stop processing the packet and discard
	// it without processing any further chunk; for a parameter, stop
	// processing it and the parameters after it within the chunk.
	ActionStop Action = 0
	// ActionStopReport (01): as ActionStop, and report the chunk in an
	// ERROR chunk with an Unrecognized Chunk Type cause (§3.3.10.6), or
	// the parameter as an Unrecognized Parameter (§3.3.3, §3.3.10.8).
	ActionStopReport Action = 1
	// ActionSkip (10): skip the chunk or parameter and go on with the next.
	ActionSkip Action = 2
	// ActionSkipReport (11): skip, go on, and report it as for
	// ActionStopReport.
	ActionSkipReport Action = 3
)

// Skip reports whether processing goes on after the unrecognized item.
func (a Action) Skip() bool { return a&2 != 0 }

// Report reports whether the unrecognized item is reported to the sender.
func (a Action) Report() bool { return a&1 != 0 }

// String names the action.
func (a Action) String() string {
	switch a & 3 {
	case ActionStop:
		return "stop"
	case ActionStopReport:
		return "stop and report"
	case ActionSkip:
		return "skip"
	}
	return "skip and report"
}

// ChunkHeaderLen is the length of the chunk header: Chunk Type, Chunk
// Flags and Chunk Length (RFC 9260 §3.2).
const ChunkHeaderLen = 4

// MaxChunkLen is the largest Chunk Length (a 16-bit field).
const MaxChunkLen = 65535

// FlagT is the T bit of ABORT (§3.3.7) and SHUTDOWN COMPLETE (§3.3.13):
// set when the packet carries the peer's own Verification Tag reflected
// rather than the one the peer expects (§8.5.1).
const FlagT uint8 = 1

// Chunk is a view of one chunk of a packet (RFC 9260 §3.2): its type,
// flags, and value. Value holds Chunk Length - 4 octets, without the
// padding, and aliases the packet.
type Chunk struct {
	Type  ChunkType
	Flags uint8
	Value []byte
}

// Len returns the chunk's Chunk Length field: header and value, without
// padding.
func (c Chunk) Len() int { return ChunkHeaderLen + len(c.Value) }

// Append appends the chunk as it is, header, value and padding. It
// panics if the chunk does not fit in its 16-bit length field, which a
// chunk parsed from the wire always does.
func (c Chunk) Append(b []byte) []byte {
	b = appendChunkHeader(b, c.Type, c.Flags, c.Len())
	b = append(b, c.Value...)
	return pad(b)
}

// ParseChunk reads the chunk at the start of b. n is the number of octets
// it takes with its padding, the offset of the next chunk; the padding of
// the last chunk of a packet may be missing (a receiver ignores padding,
// RFC 9260 §3.2). A Chunk Length below 4 or beyond b is ErrChunkLength,
// fewer than 4 octets ErrTruncated.
func ParseChunk(b []byte) (c Chunk, n int, err error) {
	if len(b) < ChunkHeaderLen {
		return Chunk{}, 0, ErrTruncated
	}
	l := int(binary.BigEndian.Uint16(b[2:]))
	if l < ChunkHeaderLen || l > len(b) {
		return Chunk{}, 0, ErrChunkLength
	}
	c = Chunk{Type: ChunkType(b[0]), Flags: b[1], Value: b[ChunkHeaderLen:l:l]}
	return c, min(padded(l), len(b)), nil
}

// ChunkIter walks the chunks of a packet. It allocates nothing:
//
//	it := wire.NewChunkIter(chunks)
//	for c, ok := it.Next(); ok; c, ok = it.Next() { ... }
//	if err := it.Err(); err != nil { ... }
type ChunkIter struct {
	b   []byte
	err error
}

// NewChunkIter returns an iterator over the chunks in b, the octets after
// a packet's common header.
func NewChunkIter(b []byte) ChunkIter { return ChunkIter{b: b} }

// Next returns the next chunk; ok is false at the end of the packet or at
// a malformed chunk (then Err says which).
func (it *ChunkIter) Next() (c Chunk, ok bool) {
	if len(it.b) == 0 || it.err != nil {
		return Chunk{}, false
	}
	c, n, err := ParseChunk(it.b)
	if err != nil {
		it.err, it.b = err, nil
		return Chunk{}, false
	}
	it.b = it.b[n:]
	return c, true
}

// Err returns the error that ended the iteration, nil at the end of a
// well-formed packet.
func (it *ChunkIter) Err() error { return it.err }

// Rest returns the octets not yet iterated.
func (it *ChunkIter) Rest() []byte { return it.b }

// BeginChunk appends a chunk header with a zero length, for a chunk built
// in place; write its value after it, then call EndChunk with start, the
// length of b before BeginChunk.
func BeginChunk(b []byte, t ChunkType, flags uint8) []byte {
	return append(b, byte(t), flags, 0, 0)
}

// EndChunk completes a chunk begun at start by BeginChunk: it sets the
// Chunk Length (without the padding of the chunk's last parameter or
// cause, RFC 9260 §3.2) and pads the chunk. If the chunk is longer than
// MaxChunkLen, it returns b cut back to start and ErrTooLong.
func EndChunk(b []byte, start int) ([]byte, error) {
	l := len(b) - start
	if start < 0 || l < ChunkHeaderLen {
		return b, ErrChunkLength
	}
	if l > MaxChunkLen {
		return b[:start], ErrTooLong
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(l))
	return pad(b), nil
}

// appendChunkHeader appends a chunk header of Chunk Length l, which must
// fit 16 bits.
func appendChunkHeader(b []byte, t ChunkType, flags uint8, l int) []byte {
	if l > MaxChunkLen {
		panic("internal/sctp/wire: " + t.String() + " chunk longer than 65535 octets")
	}
	return append(b, byte(t), flags, byte(l>>8), byte(l))
}

// padded rounds n up to a multiple of 4.
func padded(n int) int { return (n + 3) &^ 3 }

var zeros [3]byte

// pad appends zero octets until len(b) is a multiple of 4.
func pad(b []byte) []byte { return append(b, zeros[:padded(len(b))-len(b)]...) }

// Pad appends the zero padding that brings a packet built in b to a
// multiple of 4 octets (RFC 9260 §3.2), after a chunk whose value was
// appended by the caller (Data.AppendHeader).
func Pad(b []byte) []byte { return pad(b) }

// checkType returns ErrChunkType unless c is of one of the types.
func checkType(c Chunk, t ChunkType) error {
	if c.Type != t {
		return ErrChunkType
	}
	return nil
}
