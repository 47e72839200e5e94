package mpa

// The Terminate of a failed enhanced negotiation.
//
// RFC 6581 §9.1 and §9.2 require the Initiator to "send a TERM message to
// the responder" and terminate the connection when the negotiation cannot
// be completed, with Layer 2, Error Type 0 and Error Code 6 (insufficient
// IRD) or 7 (no matching RTR option); §9.3 puts that TERM where the RTR
// indication would have gone, as the first message after the MPA Reply.
// The TERM is the RDMAP Terminate Message (RFC 5040 §4.8, §5.4), which
// travels as an untagged DDP message on QN 2 inside an FPDU. The failure
// is found before any RDMAP endpoint exists on the connection, so this
// package builds that single message itself; all else of RDMAP and DDP
// stays above the llp.Stream interface.

// negotiationTermLen is the ULPDU of the Terminate: an untagged DDP header
// (RFC 5041 §4.3, 18 octets) and a Terminate Header with neither DDP
// Segment Length, terminated DDP header nor RDMA header (RFC 5040 §4.8,
// 4 octets).
const negotiationTermLen = 18 + 4

// appendNegotiationTerm appends the DDP segment of the RDMAP Terminate
// Message reporting MPA error code (RFC 6581 §8: layer 2 LLP, error type 0
// MPA) to b.
func appendNegotiationTerm(b []byte, code uint8) []byte {
	return append(b,
		// DDP Control Field (RFC 5041 §4.1): T = 0 (untagged), L = 1
		// (one-segment message), reserved 0, DV = 1.
		0x41,
		// RsvdULP[0:7], the RDMAP Control Field (RFC 5040 §4.1 Figure 3):
		// RV = 01b, reserved 0, Opcode 0x7 Terminate.
		0x47,
		// RsvdULP[8:39]: no Invalidate STag for a Terminate (§4.1).
		0, 0, 0, 0,
		// QN 2, the Terminate queue (RFC 5040 §4.1 Figure 4).
		0, 0, 0, 2,
		// MSN 1: the first message on QN 2 (RFC 5041 §4.3: "The initial
		// value for MSN MUST be one").
		0, 0, 0, 1,
		// MO 0.
		0, 0, 0, 0,
		// Terminate Control (RFC 5040 §4.8 Figure 8): Layer | EType, Error
		// Code, HdrCt M = D = R = 0 (no DDP segment is being terminated)
		// and the reserved bits.
		TermLayerLLP<<4|ETypeMPA, code, 0, 0,
	)
}
