package pion

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// The Adaptation Layer Indication parameter (RFC 5061 §4.2.6): type 0xC006,
// length 8, a 32-bit indication. RFC 5043 §5.1 and §11.1 have a DDP
// endpoint send it with AdaptationIndicationDDP in its INIT or INIT-ACK and
// check the peer's. pion has no API for it, so the pion backend adds it to
// the INIT and INIT-ACK pion writes and reads the peer's from the INIT or
// INIT-ACK pion reads, at the conn layer (writeErrConn).
const (
	aliParamType = uint16(wire.ParamAdaptationLayer)
	aliParamLen  = 8
)

// isInitPacket reports whether pkt's first chunk is INIT or INIT ACK, which
// are never bundled (RFC 9260 §6.10).
func isInitPacket(pkt []byte) bool {
	if len(pkt) < wire.HeaderLen+wire.ChunkHeaderLen+sctpInitFixedLen {
		return false
	}
	t := wire.ChunkType(pkt[wire.HeaderLen])
	return t == wire.ChunkInit || t == wire.ChunkInitAck
}

// appendALI returns a copy of the INIT or INIT ACK packet pkt with an
// Adaptation Layer Indication of ind added as the last parameter, the
// chunk length and the CRC32c updated; ok is false (and pkt is returned)
// when pkt is not such a packet, does not parse or already carries one.
func appendALI(pkt []byte, ind uint32) (out []byte, ok bool) {
	if !isInitPacket(pkt) {
		return pkt, false
	}
	if _, found, valid := findALI(pkt); found || !valid {
		return pkt, false
	}
	chunk := pkt[wire.HeaderLen:]
	clen := int(binary.BigEndian.Uint16(chunk[2:]))
	// RFC 9260 §3.2: the chunk length leaves out the last parameter's
	// padding, which the new last parameter follows.
	padded := (clen + 3) &^ 3
	if padded > len(chunk) || padded+aliParamLen > 0xFFFF {
		return pkt, false
	}
	out = make([]byte, wire.HeaderLen+padded+aliParamLen)
	copy(out, pkt[:wire.HeaderLen+clen])
	p := out[wire.HeaderLen+padded:]
	binary.BigEndian.PutUint16(p, aliParamType)
	binary.BigEndian.PutUint16(p[2:], aliParamLen)
	binary.BigEndian.PutUint32(p[4:], ind)
	binary.BigEndian.PutUint16(out[wire.HeaderLen+2:], uint16(padded+aliParamLen))
	wire.SetChecksum(out)
	return out, true
}

// findALI looks for an Adaptation Layer Indication in the INIT or INIT ACK
// packet pkt. valid is false when the parameter list does not parse.
func findALI(pkt []byte) (ind uint32, found, valid bool) {
	chunk := pkt[wire.HeaderLen:]
	clen := int(binary.BigEndian.Uint16(chunk[2:]))
	if clen < wire.ChunkHeaderLen+sctpInitFixedLen || clen > len(chunk) {
		return 0, false, false
	}
	for off := wire.ChunkHeaderLen + sctpInitFixedLen; off+wire.ParamHeaderLen <= clen; {
		typ := binary.BigEndian.Uint16(chunk[off:])
		plen := int(binary.BigEndian.Uint16(chunk[off+2:]))
		if plen < wire.ParamHeaderLen || off+plen > clen {
			return 0, false, false
		}
		if typ == aliParamType && plen == aliParamLen {
			ind, found = binary.BigEndian.Uint32(chunk[off+4:]), true
		}
		off += (plen + 3) &^ 3
	}
	return ind, found, true
}

// aliState is what the conn layer learnt of the peer's indication.
type aliState struct {
	// send is the indication added to outgoing INIT and INIT ACK; 0 sends
	// none (tests of a peer without it).
	send uint32
	// peer holds the peer's indication with bit 32 set once one was
	// received in an INIT or INIT ACK.
	peer atomic.Uint64
}

// outgoing adds the indication to an INIT or INIT ACK pion writes.
func (s *aliState) outgoing(pkt []byte) []byte {
	if s.send == 0 || !isInitPacket(pkt) {
		return pkt
	}
	out, _ := appendALI(pkt, s.send)
	return out
}

// incoming records the indication of an INIT or INIT ACK pion reads.
func (s *aliState) incoming(pkt []byte) {
	if !isInitPacket(pkt) {
		return
	}
	if ind, found, valid := findALI(pkt); valid && found {
		s.peer.Store(1<<32 | uint64(ind))
	}
}

// setPeer records the indication of an INIT the listener answered
// statelessly (pion_handshake.go).
func (s *aliState) setPeer(ind uint32, ok bool) {
	if ok {
		s.peer.Store(1<<32 | uint64(ind))
	}
}

// peerIndication returns the peer's indication, ok false when it sent none.
func (s *aliState) peerIndication() (uint32, bool) {
	v := s.peer.Load()
	return uint32(v), v&(1<<32) != 0
}
