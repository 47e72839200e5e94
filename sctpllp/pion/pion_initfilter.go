package pion

import (
	"encoding/binary"
	"errors"
	"net"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// pion/sctp v1.11.3 refuses an INIT that carries any parameter it does not
// know whose two high type bits are 00 or 01 (chunkInit.check returns
// ErrInitUnknownParam). RFC 9260 §3.2.1 gives those bits a different
// meaning: "00 - Stop processing this parameter and do not process any
// further parameters within this chunk" (01: the same, and report it). The
// INIT itself stays valid. Linux always sends a Supported Address Types
// parameter (type 12, bits 00), so a passive pion endpoint drops every
// kernel INIT. initFilterConn fixes that on the wire: it rewrites incoming
// INITs as RFC 9260 says the receiver must read them — the parameters from
// the first unknown "stop" one on are cut off — and recomputes the CRC32c.
// What it cannot do is the "report" of bits 01 (an Unrecognized Parameter
// cause in INIT-ACK): pion builds the INIT-ACK.

// Errors of stripInitParams. A packet it cannot parse is passed on
// unchanged by initFilterConn (pion then judges it).
var (
	// errInitFilterShort reports a packet shorter than its headers say.
	errInitFilterShort = errors.New("sctpllp: SCTP packet truncated")
	// errInitFilterNotInit reports a packet whose first chunk is not INIT.
	errInitFilterNotInit = errors.New("sctpllp: not an SCTP INIT packet")
)

// sctpInitFixedLen is the INIT's fixed fields after its chunk header,
// Initiate Tag to Initial TSN (RFC 9260 §3.3.2); sctpParamActionMask the
// two high bits of a parameter type that say what to do with an unknown
// one (§3.2.1).
const (
	sctpInitFixedLen    = wire.InitHeaderLen - wire.ChunkHeaderLen
	sctpParamActionMask = 0xC000
)

// knownInitParam reports whether pion/sctp v1.11.3 parses INIT
// parameter type typ (its buildParam): every other type with the high bits
// 00 or 01 makes it refuse the INIT.
func knownInitParam(typ uint16) bool {
	switch typ {
	case 1, 7, 13, 16, // heartbeat info, state cookie, outgoing reset req, re-config response
		0x8000, 0x8001, 0x8002, 0x8003, 0x8004, 0x8008, // ECN, zero checksum, random, chunk list, HMAC, supported ext
		0xC000: // forward TSN supported
		return true
	}
	return false
}

// rfc9260BaseParam reports whether typ is an INIT parameter of base SCTP
// (RFC 9260 §3.3.2.1) that pion does not parse but every RFC 9260 receiver
// understands: IPv4 Address (5), IPv6 Address (6), Cookie Preservative (9),
// Host Name Address (11, deprecated), Supported Address Types (12). For pion,
// which runs over one UDP path, removing them changes nothing: it would
// ignore the extra addresses and the address types anyway.
func rfc9260BaseParam(typ uint16) bool {
	switch typ {
	case 5, 6, 9, 11, 12:
		return true
	}
	return false
}

// stripInitParams rewrites, in place, an SCTP packet whose only chunk is
// INIT (RFC 9260 §6.10) so that a receiver that parses only the parameter
// types known accepts it as RFC 9260 requires: a known base-SCTP parameter
// that does not parse (rfc9260BaseParam) is removed; from the first other
// unknown parameter with high type bits 00 or 01 (RFC 9260 §3.2.1) on,
// every parameter is removed; types with high bits 10 or 11 stay for the
// receiver to skip. The chunk length and CRC32c are updated. It returns the
// new length and whether the packet changed; it never panics or writes
// outside pkt, and leaves a malformed packet unchanged with an error.
func stripInitParams(pkt []byte, known func(uint16) bool) (n int, changed bool, err error) {
	if len(pkt) < wire.HeaderLen+wire.ChunkHeaderLen {
		return len(pkt), false, errInitFilterShort
	}
	chunk := pkt[wire.HeaderLen:]
	if chunk[0] != byte(wire.ChunkInit) {
		return len(pkt), false, errInitFilterNotInit
	}
	clen := int(binary.BigEndian.Uint16(chunk[2:]))
	if clen < wire.ChunkHeaderLen+sctpInitFixedLen || clen > len(chunk) {
		return len(pkt), false, errInitFilterShort
	}
	// Validate the whole parameter list before touching anything.
	for off := wire.ChunkHeaderLen + sctpInitFixedLen; off+wire.ParamHeaderLen <= clen; {
		plen := int(binary.BigEndian.Uint16(chunk[off+2:]))
		if plen < wire.ParamHeaderLen || off+plen > clen {
			return len(pkt), false, errInitFilterShort
		}
		off += (plen + 3) &^ 3
	}
	off := wire.ChunkHeaderLen + sctpInitFixedLen
	for off+wire.ParamHeaderLen <= clen {
		typ := binary.BigEndian.Uint16(chunk[off:])
		plen := int(binary.BigEndian.Uint16(chunk[off+2:]))
		padded := min((plen+3)&^3, clen-off)
		switch {
		case known(typ) || typ&sctpParamActionMask > 0x4000:
			off += padded
		case rfc9260BaseParam(typ):
			copy(chunk[off:clen], chunk[off+padded:clen])
			clen -= padded
			changed = true
		default:
			clen = off
			changed = true
		}
	}
	if !changed {
		return len(pkt), false, nil
	}
	// Anything after the INIT chunk (there should be nothing) is dropped.
	binary.BigEndian.PutUint16(chunk[2:], uint16(clen))
	n = wire.HeaderLen + clen
	wire.SetChecksum(pkt[:n])
	return n, true, nil
}

// initFilterConn wraps the packet connection a passive pion/sctp endpoint
// reads from (a connected UDP socket for SCTP over UDP, RFC 6951) and
// rewrites each incoming INIT with stripInitParams and knownInitParam,
// so that pion accepts INITs from Linux kernel SCTP. Every other packet,
// and everything written, passes unchanged.
type initFilterConn struct {
	net.Conn
	stripped atomic.Int64
}

// Stripped returns how many INITs were rewritten.
func (f *initFilterConn) Stripped() int64 { return f.stripped.Load() }

// NewInitFilterConn wraps c, the conn of a passive NewTransport, so that
// pion accepts INITs from Linux kernel SCTP (initFilterConn). The result
// also has Stripped() int64: how many INITs were rewritten.
func NewInitFilterConn(c net.Conn) net.Conn { return newInitFilterConn(c) }

func newInitFilterConn(c net.Conn) *initFilterConn { return &initFilterConn{Conn: c} }

// Read implements net.Conn: one packet, with an INIT rewritten.
func (f *initFilterConn) Read(b []byte) (int, error) {
	n, err := f.Conn.Read(b)
	if n > wire.HeaderLen && b[wire.HeaderLen] == byte(wire.ChunkInit) {
		if m, changed, serr := stripInitParams(b[:n], knownInitParam); serr == nil && changed {
			f.stripped.Add(1)
			n = m
		}
	}
	return n, err
}
