package rdmap

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// Opcode is the 4-bit RDMA Message OpCode of the RDMAP Control Field
// (RFC 5040 §4.1 Figure 4, RFC 7306 §4.1 Figure 2).
type Opcode uint8

// RDMA Message OpCodes.
const (
	OpWrite              Opcode = 0x0 // RDMA Write (tagged)
	OpReadRequest        Opcode = 0x1 // RDMA Read Request (untagged, QN 1)
	OpReadResponse       Opcode = 0x2 // RDMA Read Response (tagged)
	OpSend               Opcode = 0x3 // Send (QN 0)
	OpSendInvalidate     Opcode = 0x4 // Send with Invalidate (QN 0)
	OpSendSE             Opcode = 0x5 // Send with Solicited Event (QN 0)
	OpSendSEInvalidate   Opcode = 0x6 // Send with SE and Invalidate (QN 0)
	OpTerminate          Opcode = Opcode(iwarp.RDMAPOpTerminate)
	OpImmediate          Opcode = 0x8 // Immediate Data (QN 0), RFC 7306 §6
	OpImmediateSE        Opcode = 0x9 // Immediate Data with SE (QN 0), RFC 7306 §6
	OpAtomicRequest      Opcode = 0xA // Atomic Request (QN 1), RFC 7306 §5.2.1
	OpAtomicResponse     Opcode = 0xB // Atomic Response (QN 3), RFC 7306 §5.2.2
	opcodeReservedLowest Opcode = 0xC
)

// Untagged Queue Numbers (RFC 5040 §4.1 Figure 4, RFC 7306 §4.1).
const (
	QNSend           uint32 = 0 // Send, Send with Invalidate/SE, Immediate Data
	QNReadRequest    uint32 = 1 // RDMA Read Request and Atomic Request
	QNTerminate      uint32 = iwarp.RDMAPQNTerminate
	QNAtomicResponse uint32 = 3 // Atomic Response
	// numQueues is the number of untagged queues RDMAP uses.
	numQueues = 4
)

var opcodeNames = [...]string{
	OpWrite:            "RDMA Write",
	OpReadRequest:      "RDMA Read Request",
	OpReadResponse:     "RDMA Read Response",
	OpSend:             "Send",
	OpSendInvalidate:   "Send with Invalidate",
	OpSendSE:           "Send with Solicited Event",
	OpSendSEInvalidate: "Send with Solicited Event and Invalidate",
	OpTerminate:        "Terminate",
	OpImmediate:        "Immediate Data",
	OpImmediateSE:      "Immediate Data with Solicited Event",
	OpAtomicRequest:    "Atomic Request",
	OpAtomicResponse:   "Atomic Response",
}

// String returns the RFC name of the opcode.
func (o Opcode) String() string {
	if int(o) < len(opcodeNames) {
		return opcodeNames[o]
	}
	return fmt.Sprintf("reserved opcode %#x", uint8(o))
}

// Valid reports whether o is defined by RFC 5040 or RFC 7306 (0x0-0xB);
// 0xC-0xF are reserved.
func (o Opcode) valid() bool { return o < opcodeReservedLowest }

// Tagged reports whether messages with this opcode use the DDP Tagged
// Buffer Model (RFC 5040 Figure 4 "Tagged Flag").
func (o Opcode) tagged() bool { return o == OpWrite || o == OpReadResponse }

// QN returns the untagged Queue Number messages with this opcode use, and
// false for tagged or reserved opcodes.
func (o Opcode) qn() (uint32, bool) {
	switch o {
	case OpSend, OpSendInvalidate, OpSendSE, OpSendSEInvalidate, OpImmediate, OpImmediateSE:
		return QNSend, true
	case OpReadRequest, OpAtomicRequest:
		return QNReadRequest, true
	case OpTerminate:
		return QNTerminate, true
	case OpAtomicResponse:
		return QNAtomicResponse, true
	}
	return 0, false
}

// HasInvalidateSTag reports whether the Invalidate STag field is valid for
// this opcode (RFC 5040 §4.1: only Send with Invalidate and Send with SE and
// Invalidate).
func (o Opcode) HasInvalidateSTag() bool {
	return o == OpSendInvalidate || o == OpSendSEInvalidate
}

// Solicited reports whether the opcode carries a Solicited Event.
func (o Opcode) solicited() bool {
	return o == OpSendSE || o == OpSendSEInvalidate || o == OpImmediateSE
}

// version is the RDMA Version (RV) this implementation speaks: 01b, RFC 5040
// §4.1.
const version = iwarp.RDMAPVersion

// controlLen is the length of the RDMAP Control Field.
const controlLen = 1

// control is the RDMAP Control Field, the first octet of the DDP RsvdULP
// field (RFC 5040 §4.1 Figure 3): RV (2 bits), Rsv (2 bits), Opcode (4 bits).
type control struct {
	// Version is the 2-bit RDMA Version.
	Version uint8
	// Reserved holds the 2 reserved bits as received (set to zero on
	// transmit, ignored on receive).
	Reserved uint8
	// Opcode is the 4-bit RDMA Message OpCode.
	Opcode Opcode
}

// controlFor returns the control field of version 01b for op.
func controlFor(op Opcode) control { return control{Version: version, Opcode: op} }

// ControlByte returns the encoded RDMAP Control Field for op (RV 01b).
func ControlByte(op Opcode) uint8 { return iwarp.RDMAPControlByte(uint8(op)) }

// parseControl decodes the RDMAP Control Field from b[0]. It rejects an RDMA
// Version other than 01b (RFC 5040 §7.2 check 3: Terminate "Invalid RDMAP
// Version") and the reserved opcodes 0xC-0xF (§7.2 check 2: "Unexpected
// OpCode"). The reserved bits are ignored (§4.1).
func parseControl(b []byte) (control, int, error) {
	if len(b) < controlLen {
		return control{}, 0, truncated("RDMAP control field", controlLen, len(b), iwarp.TermOperationUnspecified)
	}
	c := decodeControl(b[0])
	if c.Version != version {
		return c, controlLen, &protocolError{Code: iwarp.TermInvalidVersion,
			Reason: fmt.Sprintf("RDMA version %d, want %d (RFC 5040 §4.1)", c.Version, version)}
	}
	if !c.Opcode.valid() {
		return c, controlLen, &protocolError{Code: iwarp.TermUnexpectedOpcode,
			Reason: fmt.Sprintf("reserved opcode %#x (RFC 5040 §4.1 Figure 4)", uint8(c.Opcode))}
	}
	return c, controlLen, nil
}

// decodeControl splits a control octet into its fields without validation.
func decodeControl(v uint8) control {
	return control{Version: v >> 6, Reserved: v >> 4 & 0x3, Opcode: Opcode(v & 0x0f)}
}

// Byte returns the encoded control octet; reserved bits are sent as zero.
func (c control) Byte() uint8 { return (c.Version&0x3)<<6 | uint8(c.Opcode)&0x0f }

// Append appends the encoded control octet to b.
func (c control) Append(b []byte) []byte { return append(b, c.Byte()) }

// Len returns ControlLen.
func (c control) Len() int { return controlLen }
