package iwarpwire

// MPA framing sizes (RFC 5044 §3, §4.1-§4.5): package mpa frames with them
// and package pmtu derives MPA's MULPDU from them.
const (
	// MPAFPDUHeaderLen is the ULPDU_Length field of an FPDU (§4.1).
	MPAFPDUHeaderLen = 2
	// MPACRCLen is the CRC field of an FPDU (§4.1).
	MPACRCLen = 4
	// MPAMaxULPDU is the largest ULPDU DDP may post to MPA (§3).
	MPAMaxULPDU = 64768
	// MPAMinMULPDU is the smallest MULPDU MPA may report (§3, §4.5).
	MPAMinMULPDU = 128
	// MPAMarkerLen is the length of a Marker (§4.2).
	MPAMarkerLen = 4
	// MPAMarkerInterval is the spacing of Markers in the TCP octet stream
	// (§4.3).
	MPAMarkerInterval = 512
)

// MPAMULPDU returns the MULPDU for an effective MSS of emss octets
// (RFC 5044 §4.5):
//
//	with Markers:    EMSS - (6 + 4 * Ceiling(EMSS / 512) + EMSS mod 4)
//	without Markers: EMSS - (6 + EMSS mod 4)
//
// clamped to [MPAMinMULPDU, MPAMaxULPDU] (§3, §4.5: never below 128).
func MPAMULPDU(emss int, markers bool) int {
	m := emss - (MPAFPDUHeaderLen + MPACRCLen + emss%4)
	if markers {
		m -= MPAMarkerLen * ((emss + MPAMarkerInterval - 1) / MPAMarkerInterval)
	}
	return min(max(m, MPAMinMULPDU), MPAMaxULPDU)
}

// MPA Request and Reply Frames (RFC 5044 §7.1.1, RFC 6581 §6).
const (
	// MPAFrameHeaderLen is the fixed part of a Request or Reply Frame: the
	// 16-octet Key, the flags octet, Rev and PD_Length.
	MPAFrameHeaderLen = 20
	// MPARev1 is the MPA revision of RFC 5044.
	MPARev1 = 1
	// MPARev2 is the MPA revision of enhanced connection establishment
	// (RFC 6581 §6: "two or higher").
	MPARev2 = 2
)
