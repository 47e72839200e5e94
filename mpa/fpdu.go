package mpa

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// The FPDU field sizes and ULPDU limits (RFC 5044 §3, §4.1, §4.5) are
// iwarp's: iwarpwire.MPAFPDUHeaderLen, iwarpwire.MPACRCLen, iwarpwire.MPAMaxULPDU,
// iwarpwire.MPAMinMULPDU.

// padLen returns the number of pad octets (0–3) after a ULPDU of n octets,
// making the FPDU (2-octet header + ULPDU + pad) a multiple of 4
// (RFC 5044 §4.1).
func padLen(n int) int { return (-(iwarpwire.MPAFPDUHeaderLen + n)) & 3 }

// wireLen returns the number of octets an FPDU carrying a ULPDU of ulpduLen
// octets occupies in the TCP stream when its first octet is at stream
// position pos: header, ULPDU, pad and CRC, plus, when markers is true, the
// Marker preceding it if one is due at pos and every Marker falling inside
// it (RFC 5044 §4.3). A Marker due exactly after the CRC belongs to the
// next FPDU and is not counted.
func wireLen(pos uint64, ulpduLen int, markers bool) int {
	body := iwarpwire.MPAFPDUHeaderLen + ulpduLen + padLen(ulpduLen) + iwarpwire.MPACRCLen
	if !markers {
		return body
	}
	n := body
	off := int(pos % iwarpwire.MPAMarkerInterval)
	if off == 0 {
		n += iwarpwire.MPAMarkerLen // RFC 5044 §4.3: FPDUPTR 0, part of this FPDU
		off = iwarpwire.MPAMarkerLen
	}
	if room := iwarpwire.MPAMarkerInterval - off; body > room {
		n += iwarpwire.MPAMarkerLen * ((body - room + iwarpwire.MPAMarkerInterval - iwarpwire.MPAMarkerLen - 1) / (iwarpwire.MPAMarkerInterval - iwarpwire.MPAMarkerLen))
	}
	return n
}

// FPDU is a Framed Protocol Data Unit (RFC 5044 §4.1 Figure 2, with the
// Markers of §4.3 Figure 4), drawn at the top of the struct.
type FPDU struct {
	//	0                   1                   2                   3
	//	0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|          ULPDU_Length         |                               |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
	//	~                            ULPDU                              ~
	//	|                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|                               |          PAD (0-3 octets)     |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//	|                             CRC                               |
	//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
	//
	// The CRC32c covers every octet of the FPDU before the CRC field, Markers
	// included, a preceding FPDUPTR-0 Marker included (RFC 5044 §4.4).

	// ULPDU is the DDP segment carried.
	ULPDU []byte
	// Pos is the stream position of the FPDU's first octet, counted from
	// the first octet of the half connection's Full Operation Phase; only
	// Pos mod 512 matters, and only with Markers (RFC 5044 §4.3).
	Pos uint64
	// Markers selects Marker insertion (the peer set M, RFC 5044 §7.1.1).
	Markers bool
	// CRC selects CRC generation; without it the CRC field is sent as zero
	// (RFC 5044 §4.1: present, any value, not checked).
	CRC bool
	// CRCValue is the CRC field as received (ParseFPDU) or as last computed
	// by Append.
	CRCValue uint32
}

// Len returns the wire length of f: WireLen(f.Pos, len(f.ULPDU), f.Markers).
func (f *FPDU) len() int { return wireLen(f.Pos, len(f.ULPDU), f.Markers) }

// Append appends the wire form of f at stream position f.Pos and records
// the CRC in f.CRCValue. It allocates nothing when b has room for f.Len()
// more octets. len(f.ULPDU) must not exceed 65535; callers enforce MULPDU.
func (f *FPDU) append(b []byte) []byte {
	b, f.CRCValue = appendFPDU(b, f.Pos, f.Markers, f.CRC, f.ULPDU, nil)
	return b
}

// appendFPDU appends one FPDU whose ULPDU is hdr followed by payload (the
// DDP gather list) at stream position pos, returning the CRC field value.
func appendFPDU(b []byte, pos uint64, markers, crc bool, hdr, payload []byte) ([]byte, uint32) {
	start := len(b)
	ulen := len(hdr) + len(payload)
	var pad [3]byte
	if !markers {
		b = binary.BigEndian.AppendUint16(b, uint16(ulen))
		b = append(b, hdr...)
		b = append(b, payload...)
		b = append(b, pad[:padLen(ulen)]...)
	} else {
		w := markWriter{b: b, pos: pos}
		w.begin()
		var l [2]byte
		binary.BigEndian.PutUint16(l[:], uint16(ulen))
		w.write(l[:])
		w.write(hdr)
		w.write(payload)
		w.write(pad[:padLen(ulen)])
		w.beforeCRC()
		b = w.b
	}
	var c uint32
	if crc {
		c = crcOf(b[start:])
	}
	return appendCRC(b, c), c
}

// peekULPDULength reads the ULPDU_Length of the FPDU starting at the
// beginning of b, at stream position pos. With markers it skips a Marker
// due at pos (the FPDUPTR-0 Marker is verified later, by ParseFPDU). It
// returns ErrTruncated while b is too short.
func peekULPDULength(b []byte, pos uint64, markers bool) (int, error) {
	i := 0
	if markers && markerDue(pos) {
		i = iwarpwire.MPAMarkerLen
	}
	if len(b) < i+iwarpwire.MPAFPDUHeaderLen {
		return 0, errTruncated
	}
	return int(binary.BigEndian.Uint16(b[i:])), nil
}

// ParseFPDU parses the FPDU at the start of b, whose first octet is at
// stream position pos, following RFC 5044 §6: the ULPDU_Length locates the
// end of the FPDU, the CRC is verified over the octets as received
// (Markers included) when crc is true (§4.4), and only then, as §8 code 3
// says, the Markers are checked against the FPDU start (§4.3). It returns
// the FPDU, the octets consumed, and ErrTruncated while b does not hold the
// whole FPDU, or an *llp.Error: iwarp.Term.MPACRC.Code wrapping ErrCRC, iwarp.Term.MPAMarker.Code
// wrapping ErrMarker.
func ParseFPDU(b []byte, pos uint64, markers, crc bool, dst []byte) (FPDU, int, error) {
	// Without Markers the returned ULPDU aliases b. With Markers the ULPDU is
	// gathered around them into dst[:0] (grown only if too small), so a caller
	// that passes a 65535-octet dst parses without allocating.
	ulen, err := peekULPDULength(b, pos, markers)
	if err != nil {
		return FPDU{}, 0, err
	}
	n := wireLen(pos, ulen, markers)
	if len(b) < n {
		return FPDU{}, 0, errTruncated
	}
	f := FPDU{Pos: pos, Markers: markers, CRC: crc}
	f.CRCValue, _, _ = parseCRC(b[n-iwarpwire.MPACRCLen:])
	if crc {
		if got := crcOf(b[:n-iwarpwire.MPACRCLen]); got != f.CRCValue {
			return FPDU{}, 0, newError(iwarp.Term.MPACRC, fmt.Errorf("%w: computed %#08x, FPDU carries %#08x (RFC 5044 §4.4)", errCRC, got, f.CRCValue))
		}
	}
	if !markers {
		f.ULPDU = b[iwarpwire.MPAFPDUHeaderLen : iwarpwire.MPAFPDUHeaderLen+ulen : iwarpwire.MPAFPDUHeaderLen+ulen]
		return f, n, nil
	}
	unmarked, err := stripMarkers(dst[:0], b[:n], pos)
	if err != nil {
		return FPDU{}, 0, err
	}
	f.ULPDU = unmarked[iwarpwire.MPAFPDUHeaderLen : iwarpwire.MPAFPDUHeaderLen+ulen : iwarpwire.MPAFPDUHeaderLen+ulen]
	return f, n, nil
}

// markWriter appends FPDU octets, inserting Markers at every 512th stream
// position (RFC 5044 §4.3).
type markWriter struct {
	b        []byte
	pos      uint64 // stream position of the next octet appended
	fpduPos  uint64 // position of the ULPDU_Length field
	nextMark uint64 // position of the next Marker
}

// begin emits the FPDUPTR-0 Marker if one is due before the FPDU header.
func (w *markWriter) begin() {
	if markerDue(w.pos) {
		w.b = marker{}.Append(w.b)
		w.pos += iwarpwire.MPAMarkerLen
	}
	w.fpduPos = w.pos
	w.nextMark = w.pos - w.pos%iwarpwire.MPAMarkerInterval + iwarpwire.MPAMarkerInterval
}

// write appends p, inserting a Marker wherever one is due before an octet
// of p. A Marker due after the last octet is left to the next write.
func (w *markWriter) write(p []byte) {
	for len(p) > 0 {
		if w.pos == w.nextMark {
			w.mark()
		}
		k := min(uint64(len(p)), w.nextMark-w.pos)
		w.b = append(w.b, p[:k]...)
		w.pos += k
		p = p[k:]
	}
}

// beforeCRC emits a Marker due between the pad and the CRC field: it lies
// inside the FPDU and is covered by its CRC (RFC 5044 §4.4 rule 1).
func (w *markWriter) beforeCRC() {
	if w.pos == w.nextMark {
		w.mark()
	}
}

func (w *markWriter) mark() {
	w.b = marker{FPDUPTR: uint16(w.pos - w.fpduPos)}.Append(w.b)
	w.pos += iwarpwire.MPAMarkerLen
	w.nextMark += iwarpwire.MPAMarkerInterval
}

// maxWireLen bounds WireLen for any ULPDU_Length and position: the largest
// FPDU body plus a leading Marker and one Marker per 508 octets of body.
const maxWireLen = iwarpwire.MPAFPDUHeaderLen + 0xFFFF + 3 + iwarpwire.MPACRCLen + iwarpwire.MPAMarkerLen*(2+(iwarpwire.MPAFPDUHeaderLen+0xFFFF+3+iwarpwire.MPACRCLen)/(iwarpwire.MPAMarkerInterval-iwarpwire.MPAMarkerLen))
