package iwarpwire

import "github.com/sctp-rdma/sctp-rdma/iwarp"

// RDMAPNumOpcodes is the size of the 4-bit opcode space, reserved ones
// included.
const RDMAPNumOpcodes = 16

// Untagged Queue Numbers of RDMAP (RFC 5040 §4.1 Figure 4, RFC 7306 §4.1).
const (
	RDMAPQNSend           uint32 = 0 // Send, Send with Invalidate/SE, Immediate Data
	RDMAPQNReadRequest    uint32 = 1 // RDMA Read Request and Atomic Request
	RDMAPQNTerminate      uint32 = 2 // Terminate
	RDMAPQNAtomicResponse uint32 = 3 // Atomic Response
)

// HasInvalidateSTag reports whether the Invalidate STag field is valid for
// opcode o (RFC 5040 §4.1: only Send with Invalidate and Send with SE and
// Invalidate).
func HasInvalidateSTag(o iwarp.RDMAPOpcode) bool {
	return o == iwarp.RDMAPOpSendInvalidate || o == iwarp.RDMAPOpSendSEInvalidate
}

// RDMAPVersion is the RDMA Version (RV) field, 01b (RFC 5040 §4.1).
const RDMAPVersion uint8 = 0x1

// RDMAPControlByte returns the RDMAP Control Field (RFC 5040 §4.1 Figure 3)
// for opcode op: RV 01b, reserved bits 0, the 4-bit opcode.
func RDMAPControlByte(op iwarp.RDMAPOpcode) uint8 { return RDMAPVersion<<6 | uint8(op)&0x0f }

// Lengths of the Terminate Header (RFC 5040 §4.8 Figure 7).
const (
	// TerminateControlLen is the Terminate Control field (19 bits) plus
	// the 13 reserved bits.
	TerminateControlLen = 4
	// TerminateSegLenLen is the DDP Segment Length field.
	TerminateSegLenLen = 2
)

// HdrCt bits of the Terminate Control field (RFC 5040 §4.8 Figure 8), as
// they sit in its third octet.
const (
	hdrctM = 0x80 // bit 16: DDP Segment Length valid
	hdrctD = 0x40 // bit 17: DDP Header included
	hdrctR = 0x20 // bit 18: RDMAP Header included
)

// AppendTerminateControl appends the Terminate Control field (RFC 5040
// §4.8 Figure 8): Layer, EType and Error Code of code, the HdrCt bits M, D
// and R, and the reserved bits as zero.
func AppendTerminateControl(b []byte, code iwarp.TermCode, m, d, r bool) []byte {
	var hc uint8
	if m {
		hc |= hdrctM
	}
	if d {
		hc |= hdrctD
	}
	if r {
		hc |= hdrctR
	}
	return append(b, (code.Layer&0x0f)<<4|code.EType&0x0f, code.Code, hc, 0)
}

// DecodeTerminateControl reads the Terminate Control field from b, which
// holds at least TerminateControlLen octets; the reserved bits are ignored
// (RFC 5040 §4.8).
func DecodeTerminateControl(b []byte) (code iwarp.TermCode, m, d, r bool) {
	code = iwarp.TermCode{Layer: b[0] >> 4, EType: b[0] & 0x0f, Code: b[1]}
	return code, b[2]&hdrctM != 0, b[2]&hdrctD != 0, b[2]&hdrctR != 0
}
