package mpa

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// The Marker length and interval (RFC 5044 §4.2, §4.3) are iwarp's:
// iwarpwire.MPAMarkerLen, iwarpwire.MPAMarkerInterval.

// marker is an MPA Marker (RFC 5044 §4.2 Figure 3):
//
//	0                   1                   2                   3
//	0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           RESERVED            |            FPDUPTR            |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
type marker struct {
	// When Markers are enabled in a direction, the sender inserts one
	// immediately before the first FPDU of the Full Operation Phase and then at
	// every 512th octet of that half connection (RFC 5044 §4.3). Stream
	// positions in this package count octets from that first Marker, so a
	// Marker is due wherever pos%512 == 0.

	// FPDUPTR is the number of octets from the first octet of the ULPDU
	// Length field of the FPDU containing the Marker to the first octet of
	// the Marker; 0 for a Marker that falls between FPDUs (it then belongs
	// to the following FPDU). Its two low bits are always 0.
	FPDUPTR uint16
}

// parseMarker parses a Marker at the start of b. RESERVED is ignored and
// the two low bits of FPDUPTR are treated as zero, as RFC 5044 §4.2
// requires of receivers. It returns ErrTruncated if b is shorter than 4
// octets.
func parseMarker(b []byte) (marker, int, error) {
	if len(b) < iwarpwire.MPAMarkerLen {
		return marker{}, 0, errTruncated
	}
	return marker{FPDUPTR: binary.BigEndian.Uint16(b[2:]) &^ 3}, iwarpwire.MPAMarkerLen, nil
}

// Append appends m with RESERVED zero and the two low bits of FPDUPTR zero
// (RFC 5044 §4.2). It allocates nothing when b has room for 4 octets.
func (m marker) Append(b []byte) []byte {
	return append(b, 0, 0, byte(m.FPDUPTR>>8), byte(m.FPDUPTR&^3))
}

// Len returns iwarpwire.MPAMarkerLen.
func (marker) Len() int { return iwarpwire.MPAMarkerLen }

// markerDue reports whether a Marker begins at stream position pos
// (RFC 5044 §4.3: (SeqNum - SeqStart) mod 512 == 0).
func markerDue(pos uint64) bool { return pos%iwarpwire.MPAMarkerInterval == 0 }

// insertMarkers appends to dst the FPDU image unmarked (ULPDU_Length,
// ULPDU, pad, CRC field, as RFC 5044 §4.1 Figure 2 shows it) with Markers
// inserted for stream position pos (RFC 5044 §4.3). When crc is true the
// CRC field is recomputed over the marked octets, as the receiver will
// check it (RFC 5044 §4.4); otherwise it is copied. It returns an error
// wrapping ErrTruncated if unmarked is not exactly one whole FPDU. It
// allocates nothing when dst has room for WireLen octets.
func insertMarkers(dst, unmarked []byte, pos uint64, crc bool) ([]byte, error) {
	ulen, err := peekULPDULength(unmarked, 0, false)
	if err != nil {
		return dst, err
	}
	body := iwarpwire.MPAFPDUHeaderLen + ulen + padLen(ulen)
	if len(unmarked) != body+iwarpwire.MPACRCLen {
		return dst, fmt.Errorf("%w: FPDU image of %d octets, ULPDU_Length %d needs %d", errTruncated, len(unmarked), ulen, body+iwarpwire.MPACRCLen)
	}
	start := len(dst)
	w := markWriter{b: dst, pos: pos}
	w.begin()
	w.write(unmarked[:body])
	w.beforeCRC()
	if !crc {
		return append(w.b, unmarked[body:]...), nil
	}
	return appendCRC(w.b, crcOf(w.b[start:])), nil
}

// removeMarkers removes the Markers from the marked FPDU at the start of b,
// whose first octet is at stream position pos, verifying that each points
// at the FPDU's ULPDU_Length field (a Marker preceding the FPDU must be 0)
// (RFC 5044 §4.2, §4.3). It appends the unmarked image (ULPDU_Length,
// ULPDU, pad, CRC field) to dst and returns it with the number of octets of
// b consumed. Errors: ErrTruncated while b does not hold the whole FPDU;
// *llp.Error iwarp.Term.MPAMarker.Code wrapping ErrMarker. It does not check the CRC (see
// ParseFPDU, which checks it first, RFC 5044 §8 code 3).
func removeMarkers(dst, b []byte, pos uint64) ([]byte, int, error) {
	ulen, err := peekULPDULength(b, pos, true)
	if err != nil {
		return dst, 0, err
	}
	n := wireLen(pos, ulen, true)
	if len(b) < n {
		return dst, 0, errTruncated
	}
	out, err := stripMarkers(dst, b[:n], pos)
	if err != nil {
		return dst, 0, err
	}
	return out, n, nil
}

// stripMarkers appends the unmarked image of the whole marked FPDU wire to
// dst, verifying every Marker.
func stripMarkers(dst, wire []byte, pos uint64) ([]byte, error) {
	i := 0
	if markerDue(pos) {
		m, _, _ := parseMarker(wire)
		if m.FPDUPTR != 0 {
			return dst, markerError(pos, m.FPDUPTR, 0)
		}
		i = iwarpwire.MPAMarkerLen
		pos += iwarpwire.MPAMarkerLen
	}
	fpduPos := pos
	nextMark := pos - pos%iwarpwire.MPAMarkerInterval + iwarpwire.MPAMarkerInterval
	for i < len(wire) {
		if pos == nextMark {
			m, _, err := parseMarker(wire[i:])
			if err != nil {
				return dst, err
			}
			if want := uint16(pos-fpduPos) &^ 3; m.FPDUPTR != want {
				return dst, markerError(pos, m.FPDUPTR, want)
			}
			i += iwarpwire.MPAMarkerLen
			pos += iwarpwire.MPAMarkerLen
			nextMark += iwarpwire.MPAMarkerInterval
			continue
		}
		k := min(len(wire)-i, int(nextMark-pos))
		dst = append(dst, wire[i:i+k]...)
		i += k
		pos += uint64(k)
	}
	return dst, nil
}

func markerError(pos uint64, got, want uint16) error {
	return newError(iwarp.Term.MPAMarker, fmt.Errorf("%w: marker at stream offset %d has FPDUPTR %#04x, FPDU start gives %#04x (RFC 5044 §4.3)", errMarker, pos, got, want))
}
