package iwarp

// EstablishmentTerminateLen is the length of the DDP segment
// AppendEstablishmentTerminate produces: an untagged DDP header (RFC 5041
// §4.3, 18 octets) and a Terminate Header with neither DDP Segment Length,
// terminated DDP header nor RDMA header (RFC 5040 §4.8, 4 octets).
const EstablishmentTerminateLen = 18 + 4

// AppendEstablishmentTerminate appends the DDP segment of the RDMAP
// Terminate Message with which an initiator ends a connection whose
// enhanced establishment failed (RFC 6581 §9.1 code 6, §9.2 code 7, §9.3):
// the first and only message of the stream, sent before any RDMAP endpoint
// exists, by the LLP's connection manager (over MPA as the first FPDU,
// over SCTP as the first DATA chunk of the session's stream). The layout is
// RDMAP's (RFC 5040 §4.1, §4.8) over an untagged DDP header; RDMAP's own
// Terminate path builds the same octets for every later Terminate.
func AppendEstablishmentTerminate(b []byte, code TermCode) []byte {
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
		code.Layer<<4|code.EType&0x0f, code.Code, 0, 0,
	)
}
