package dplpmtud

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// errNotProbe reports a HEARTBEAT or HEARTBEAT ACK chunk that is not one of
// this package's probes (another sender's heartbeat).
var errNotProbe = errors.New("pmtu: not a PMTU probe heartbeat")

// probeMagic opens the Heartbeat Information of every probe padded in
// its information; probeMagicPad that of a probe padded by a PAD chunk.
var (
	probeMagic    = [8]byte{'s', 'r', 'P', 'M', 'T', 'U', 'p', 'r'}
	probeMagicPad = [8]byte{'s', 'r', 'P', 'M', 'T', 'U', 'p', 'd'}
)

// maxProbeSize is the largest probe: a UDP/IPv4 datagram's payload.
const maxProbeSize = 65535 - 20 - 8

const (
	probeInfoLen = 8 + 8 + 4 // magic, nonce, size
	// probeChunkMin is the smallest probe chunk (no padding).
	probeChunkMin = wire.ChunkHeaderLen + wire.ParamHeaderLen + probeInfoLen
)

// heartbeatProbe is the RFC 8899 probe packet's only chunk: a HEARTBEAT
// (RFC 4960 §3.3.5) whose Heartbeat Information is padded so that the SCTP
// packet reaches the probed size. The peer echoes the information in a
// HEARTBEAT ACK (RFC 4960 §8.3), which Ack marks.
type heartbeatProbe struct {
	// RFC 8899 §6.2.1 suggests HEARTBEAT plus a PAD chunk (RFC 4820); pion
	// v1.11.3 rejects the whole packet on any chunk type it does not know, PAD
	// included, and Linux answers a padded Heartbeat Information as well, so
	// the padding sits inside the information instead. The price: the
	// HEARTBEAT ACK is as large as the probe, so a probe confirms the size in
	// both directions.
	//
	//	 0                   1                   2                   3
	//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|   Type = 4/5  | Chunk  Flags  |      Heartbeat Length         |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|    Heartbeat Info Type=1      |         HB Info Length        |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|                 "srPMTUpr" (8 octets)                         |
	//	|                 Nonce (8 octets)                              |
	//	|                 Probed packet size (4 octets)                 |
	//	|                 zero padding                                  |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//
	// With Pad (RFC 8899 §6.2.1.2's recommended form) the information is not
	// padded ("srPMTUpd" instead of "srPMTUpr"): a PAD chunk (RFC 4820) after
	// the HEARTBEAT fills the packet, the peer skips it (its type's upper
	// bits, RFC 9260 §3.2) and the HEARTBEAT ACK is small, so the probe
	// confirms the size in the forward direction only.

	// Ack is true for a HEARTBEAT ACK.
	Ack bool
	// Pad is true for a probe whose size a PAD chunk fills.
	Pad bool
	// Nonce identifies the probe.
	Nonce uint64
	// Size is the SCTP packet size (common header included) the probe
	// fills: a multiple of 4, at least 12 + probeChunkMin.
	Size int
}

// parseHeartbeatProbe parses a HEARTBEAT or HEARTBEAT ACK chunk that
// carries a probe. A heartbeat of another sender gives errNotProbe.
func parseHeartbeatProbe(b []byte) (heartbeatProbe, int, error) {
	c, n, err := wire.ParseChunk(b)
	if err != nil {
		return heartbeatProbe{}, 0, &WireError{What: "heartbeat", Section: "RFC 9260 §3.2", Reason: "bad chunk header", Err: err}
	}
	p, err := parseProbeChunk(c)
	return p, n, err
}

// parseProbeChunk is parseHeartbeatProbe of a parsed chunk.
func parseProbeChunk(c wire.Chunk) (heartbeatProbe, error) {
	hb, err := wire.ParseHeartbeat(c)
	if err != nil {
		if errors.Is(err, wire.ErrParamLength) || len(c.Value) < wire.ParamHeaderLen {
			err = fmt.Errorf("%w: %w", ErrShort, err)
		}
		return heartbeatProbe{}, &WireError{What: "heartbeat", Section: "RFC 9260 §3.3.5", Reason: "no Heartbeat Info parameter", Err: err}
	}
	info := hb.Info
	if len(info) < probeInfoLen || [8]byte(info[:8]) != probeMagic && [8]byte(info[:8]) != probeMagicPad {
		return heartbeatProbe{}, errNotProbe
	}
	p := heartbeatProbe{
		Ack:   c.Type == wire.ChunkHeartbeatAck,
		Pad:   [8]byte(info[:8]) == probeMagicPad,
		Nonce: binary.BigEndian.Uint64(info[8:]),
		Size:  int(binary.BigEndian.Uint32(info[16:])),
	}
	if p.Pad {
		// The HEARTBEAT alone; a PAD chunk of at least its header filled
		// the rest of the probe.
		if p.Size%4 != 0 || c.Len() != probeChunkMin || p.Size < wire.HeaderLen+probeChunkMin+wire.ChunkHeaderLen || p.Size > maxProbeSize {
			return heartbeatProbe{}, &WireError{What: "heartbeat", Section: "RFC 8899 §6.2.1.2", Reason: fmt.Sprintf("PAD probe of %d octets with a %d-octet HEARTBEAT", p.Size, c.Len())}
		}
		return p, nil
	}
	if p.Size%4 != 0 || p.Size != wire.HeaderLen+c.Len() {
		// Probes fill whole 4-octet SCTP words (RFC 8899 §4.1, RFC 9260
		// §3.2), as Append makes them.
		return heartbeatProbe{}, &WireError{What: "heartbeat", Section: "RFC 8899 §4.1", Reason: fmt.Sprintf("probe of %d octets in a %d-octet chunk", p.Size, c.Len())}
	}
	return p, nil
}

// Len returns the chunk's length: Size less the common header (Pad: the
// unpadded HEARTBEAT).
func (p heartbeatProbe) Len() int {
	if p.Pad {
		return probeChunkMin
	}
	return max(p.Size-wire.HeaderLen, probeChunkMin)
}

// Append appends the chunk; it allocates nothing when b has room.
func (p heartbeatProbe) Append(b []byte) []byte {
	n := p.Len() &^ 3
	typ := wire.ChunkHeartbeat
	if p.Ack {
		typ = wire.ChunkHeartbeatAck
	}
	start := len(b)
	b = wire.BeginChunk(b, typ, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(wire.ParamHeartbeatInfo))
	b = binary.BigEndian.AppendUint16(b, uint16(n-wire.ChunkHeaderLen))
	size := n + wire.HeaderLen
	if p.Pad {
		b = append(b, probeMagicPad[:]...)
		size = p.Size
	} else {
		b = append(b, probeMagic[:]...)
	}
	b = binary.BigEndian.AppendUint64(b, p.Nonce)
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	for range n - probeChunkMin {
		b = append(b, 0)
	}
	b, _ = wire.EndChunk(b, start) // n fits the 16-bit length: at most a 64 KiB packet
	return b
}

// appendProbePacket appends a whole probe packet of size octets (rounded
// down to a multiple of 4): hdr, the probe chunk and the CRC32c.
func appendProbePacket(b []byte, hdr wire.Header, nonce uint64, size int) []byte {
	size &^= 3
	start := len(b)
	b = wire.AppendHeader(b, hdr)
	b = heartbeatProbe{Nonce: nonce, Size: size}.Append(b)
	wire.SetChecksum(b[start:])
	return b
}

// AppendProbePacket appends an RFC 8899 probe packet of size octets (the
// SCTP packet: common header hdr, one HEARTBEAT chunk whose Heartbeat
// Information is padded to the size, and the CRC32c; size is rounded down
// to a multiple of 4). The peer answers with a HEARTBEAT ACK of the same
// size that ParseProbeAck recognises. It allocates nothing when b has
// room. Used by the project's own SCTP stack (package sctp); pion's path
// (Conn) sends the same probes.
func AppendProbePacket(b []byte, hdr wire.Header, nonce uint64, size int) []byte {
	return appendProbePacket(b, hdr, nonce, size)
}

// AppendPadProbePacket appends an RFC 8899 §6.2.1.2 probe packet of size
// octets (rounded down to a multiple of 4, at least 44): hdr, a HEARTBEAT
// with the probe's nonce and size, a PAD chunk (RFC 4820) filling the
// rest, and the CRC32c. The peer skips the PAD chunk and answers with a
// small HEARTBEAT ACK that ParseProbeAck recognises. It allocates nothing
// when b has room. A peer that drops packets with chunk types it does not
// know (pion) never answers it.
func AppendPadProbePacket(b []byte, hdr wire.Header, nonce uint64, size int) []byte {
	size = min(max(size&^3, wire.HeaderLen+probeChunkMin+wire.ChunkHeaderLen), maxProbeSize&^3)
	start := len(b)
	b = wire.AppendHeader(b, hdr)
	b = heartbeatProbe{Pad: true, Nonce: nonce, Size: size}.Append(b)
	pad := len(b)
	b = wire.BeginChunk(b, wire.ChunkPad, 0)
	for range size - (pad - start) - wire.ChunkHeaderLen {
		b = append(b, 0)
	}
	b, _ = wire.EndChunk(b, pad) // at most a 64 KiB packet
	wire.SetChecksum(b[start:])
	return b
}

// ParseProbeAck recognises a probe's HEARTBEAT ACK chunk: the probe's
// nonce and the SCTP packet size it confirmed. ok is false for any other
// chunk, among them the stack's own heartbeats.
func ParseProbeAck(c wire.Chunk) (nonce uint64, size int, ok bool) {
	p, err := parseProbeChunk(c)
	if err != nil || !p.Ack {
		return 0, 0, false
	}
	return p.Nonce, p.Size, true
}
