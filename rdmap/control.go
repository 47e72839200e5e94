package rdmap

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// opcode is the RDMA Message OpCode (RFC 5040 §4.1), defined in iwarp.
type opcode = iwarp.RDMAPOpcode

// opcodeReservedLowest is the first reserved opcode (0xC-0xF).
const opcodeReservedLowest = iwarp.RDMAPOpAtomicResponse + 1

// numQueues is the number of untagged queues RDMAP uses.
const numQueues = 4

// opValid reports whether o is defined by RFC 5040 or RFC 7306 (0x0-0xB).
func opValid(o opcode) bool { return o < opcodeReservedLowest }

// opTagged reports whether messages with this opcode use the DDP Tagged
// Buffer Model (RFC 5040 Figure 4 "Tagged Flag").
func opTagged(o opcode) bool { return o == iwarp.RDMAPOpWrite || o == iwarp.RDMAPOpReadResponse }

// opQN returns the untagged Queue Number messages with this opcode use, and
// false for tagged or reserved opcodes.
func opQN(o opcode) (uint32, bool) {
	switch o {
	case iwarp.RDMAPOpSend, iwarp.RDMAPOpSendInvalidate, iwarp.RDMAPOpSendSE,
		iwarp.RDMAPOpSendSEInvalidate, iwarp.RDMAPOpImmediate, iwarp.RDMAPOpImmediateSE:
		return iwarpwire.RDMAPQNSend, true
	case iwarp.RDMAPOpReadRequest, iwarp.RDMAPOpAtomicRequest:
		return iwarpwire.RDMAPQNReadRequest, true
	case iwarp.RDMAPOpTerminate:
		return iwarpwire.RDMAPQNTerminate, true
	case iwarp.RDMAPOpAtomicResponse:
		return iwarpwire.RDMAPQNAtomicResponse, true
	}
	return 0, false
}

// opSolicited reports whether the opcode carries a Solicited Event.
func opSolicited(o opcode) bool {
	return o == iwarp.RDMAPOpSendSE || o == iwarp.RDMAPOpSendSEInvalidate || o == iwarp.RDMAPOpImmediateSE
}

// version is the RDMA Version (RV) this implementation speaks: 01b, RFC 5040
// §4.1.
const version = iwarpwire.RDMAPVersion

// controlLen is the length of the RDMAP Control Field.
const controlLen = 1

// control is the RDMAP Control Field, the first octet of the DDP RsvdULP
// field (RFC 5040 §4.1 Figure 3): RV (2 bits), Rsv (2 bits), opcode (4 bits).
type control struct {
	// Version is the 2-bit RDMA Version.
	Version uint8
	// Reserved holds the 2 reserved bits as received (set to zero on
	// transmit, ignored on receive).
	Reserved uint8
	// opcode is the 4-bit RDMA Message OpCode.
	Opcode opcode
}

// controlFor returns the control field of version 01b for op.
func controlFor(op opcode) control { return control{Version: version, Opcode: op} }

// parseControl decodes the RDMAP Control Field from b[0]. It rejects an RDMA
// Version other than 01b (RFC 5040 §7.2 check 3: Terminate "Invalid RDMAP
// Version") and the reserved opcodes 0xC-0xF (§7.2 check 2: "Unexpected
// OpCode"). The reserved bits are ignored (§4.1).
func parseControl(b []byte) (control, int, error) {
	if len(b) < controlLen {
		return control{}, 0, truncated("RDMAP control field", controlLen, len(b), iwarp.Term.OperationUnspecified)
	}
	c := decodeControl(b[0])
	if c.Version != version {
		return c, controlLen, &protocolError{Code: iwarp.Term.InvalidVersion,
			Reason: fmt.Sprintf("RDMA version %d, want %d (RFC 5040 §4.1)", c.Version, version)}
	}
	if !opValid(c.Opcode) {
		return c, controlLen, &protocolError{Code: iwarp.Term.UnexpectedOpcode,
			Reason: fmt.Sprintf("reserved opcode %#x (RFC 5040 §4.1 Figure 4)", uint8(c.Opcode))}
	}
	return c, controlLen, nil
}

// decodeControl splits a control octet into its fields without validation.
func decodeControl(v uint8) control {
	return control{Version: v >> 6, Reserved: v >> 4 & 0x3, Opcode: opcode(v & 0x0f)}
}

// Byte returns the encoded control octet; reserved bits are sent as zero.
func (c control) Byte() uint8 { return (c.Version&0x3)<<6 | uint8(c.Opcode)&0x0f }

// Append appends the encoded control octet to b.
func (c control) Append(b []byte) []byte { return append(b, c.Byte()) }

// Len returns ControlLen.
func (c control) Len() int { return controlLen }
