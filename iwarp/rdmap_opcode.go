package iwarp

import "fmt"

// RDMAPOpcode is the 4-bit RDMA Message OpCode of the RDMAP Control Field
// (RFC 5040 §4.1 Figure 4, RFC 7306 §4.1 Figure 2).
type RDMAPOpcode uint8

// RDMA Message OpCodes; 0xC-0xF are reserved.
const (
	RDMAPOpWrite            RDMAPOpcode = 0x0 // RDMA Write (tagged)
	RDMAPOpReadRequest      RDMAPOpcode = 0x1 // RDMA Read Request (QN 1)
	RDMAPOpReadResponse     RDMAPOpcode = 0x2 // RDMA Read Response (tagged)
	RDMAPOpSend             RDMAPOpcode = 0x3 // Send (QN 0)
	RDMAPOpSendInvalidate   RDMAPOpcode = 0x4 // Send with Invalidate (QN 0)
	RDMAPOpSendSE           RDMAPOpcode = 0x5 // Send with Solicited Event (QN 0)
	RDMAPOpSendSEInvalidate RDMAPOpcode = 0x6 // Send with SE and Invalidate (QN 0)
	RDMAPOpTerminate        RDMAPOpcode = 0x7 // Terminate (QN 2)
	RDMAPOpImmediate        RDMAPOpcode = 0x8 // Immediate Data (QN 0), RFC 7306 §6
	RDMAPOpImmediateSE      RDMAPOpcode = 0x9 // Immediate Data with SE (QN 0), RFC 7306 §6
	RDMAPOpAtomicRequest    RDMAPOpcode = 0xA // Atomic Request (QN 1), RFC 7306 §5.2.1
	RDMAPOpAtomicResponse   RDMAPOpcode = 0xB // Atomic Response (QN 3), RFC 7306 §5.2.2
)

var rdmapOpcodeNames = [...]string{
	RDMAPOpWrite:            "RDMA Write",
	RDMAPOpReadRequest:      "RDMA Read Request",
	RDMAPOpReadResponse:     "RDMA Read Response",
	RDMAPOpSend:             "Send",
	RDMAPOpSendInvalidate:   "Send with Invalidate",
	RDMAPOpSendSE:           "Send with Solicited Event",
	RDMAPOpSendSEInvalidate: "Send with Solicited Event and Invalidate",
	RDMAPOpTerminate:        "Terminate",
	RDMAPOpImmediate:        "Immediate Data",
	RDMAPOpImmediateSE:      "Immediate Data with Solicited Event",
	RDMAPOpAtomicRequest:    "Atomic Request",
	RDMAPOpAtomicResponse:   "Atomic Response",
}

// String returns the RFC name of the opcode.
func (o RDMAPOpcode) String() string {
	if int(o) < len(rdmapOpcodeNames) {
		return rdmapOpcodeNames[o]
	}
	return fmt.Sprintf("reserved opcode %#x", uint8(o))
}
