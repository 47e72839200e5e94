package sctpllp

import (
	"encoding/binary"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// FunctionCode is the 16-bit function code of a DDP Stream Session Control
// message (RFC 5043 §5.2.3, RFC 6581 §7).
type FunctionCode uint16

// Function codes of RFC 5043 §5.2.3 and RFC 6581 §7 (IANA "SCTP Function
// Codes for DDP Session Control").
const (
	// FuncInitiate is DDP Stream Session Initiate.
	FuncInitiate FunctionCode = 0x001
	// FuncAccept is DDP Stream Session Accept.
	FuncAccept FunctionCode = 0x002
	// FuncReject is DDP Stream Session Reject.
	FuncReject FunctionCode = 0x003
	// FuncTerminate is DDP Stream Session Terminate.
	FuncTerminate FunctionCode = 0x004
	// FuncEnhancedInitiate is Enhanced DDP Stream Session Initiate
	// (RFC 6581 §7).
	FuncEnhancedInitiate FunctionCode = 0x005
	// FuncEnhancedAccept is Enhanced DDP Stream Session Accept.
	FuncEnhancedAccept FunctionCode = 0x006
	// FuncEnhancedReject is Enhanced DDP Stream Session Reject.
	FuncEnhancedReject FunctionCode = 0x007
)

// Valid reports whether f is one of the seven defined function codes.
func (f FunctionCode) isValid() bool { return f >= FuncInitiate && f <= FuncEnhancedReject }

// Enhanced reports whether f is one of the RFC 6581 enhanced codes, whose
// private data begins with the IRD/ORD word.
func (f FunctionCode) isEnhanced() bool { return f >= FuncEnhancedInitiate && f <= FuncEnhancedReject }

// Base maps an enhanced code to its RFC 5043 counterpart (Enhanced Initiate
// to Initiate, ...); other codes are returned unchanged.
func (f FunctionCode) base() FunctionCode {
	if f.isEnhanced() {
		return f - 4
	}
	return f
}

// String returns the RFC name of the function code.
func (f FunctionCode) String() string {
	switch f {
	case FuncInitiate:
		return "Initiate"
	case FuncAccept:
		return "Accept"
	case FuncReject:
		return "Reject"
	case FuncTerminate:
		return "Terminate"
	case FuncEnhancedInitiate:
		return "EnhancedInitiate"
	case FuncEnhancedAccept:
		return "EnhancedAccept"
	case FuncEnhancedReject:
		return "EnhancedReject"
	}
	return fmt.Sprintf("FunctionCode(%#04x)", uint16(f))
}

// maxPrivateData is the largest private data of a session control message,
// the enhanced IRD/ORD word included (RFC 5043 §5.2.3, RFC 6581 §7).
const maxPrivateData = 512

// controlHeaderLen is the length of the DDP-SSN and function code fields.
const controlHeaderLen = 4

// Control is the payload of a DDP Stream Session Control chunk, PPID 17
// (RFC 5043 §5.2.3):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          DDP-SSN              |    Function Code              |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|            Private Data (Dependent on Function Code)          |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// For the enhanced codes 0x005–0x007 the private data begins with the
// 32-bit IRD/ORD word of RFC 6581 §9, carried here in IRDORD; PrivateData
// holds only the ULP private data that follows it.
//
// RFC 6581 §7 names the Enhanced Initiate and Enhanced Accept as carrying
// the word, and §9 places it in "the MPA Request and Reply Frames" — a
// rejecting MPA Reply included, whose responder ORD §9.1 uses to tell the
// initiator what it requires. The Enhanced Reject is the SCTP form of that
// rejecting enhanced Reply, so this package sends and requires the word in
// all three enhanced codes, with the same layout as MPA (A|B|IRD, C|D|ORD).
type controlMsg struct {
	// SSN is the DDP Source Sequence Number (RFC 5043 §5.2.1).
	SSN uint16
	// Function is the function code.
	Function FunctionCode
	// IRDORD is the enhanced connection establishment word; meaningful
	// only when Function.Enhanced().
	IRDORD iwarp.IRDORD
	// PrivateData is the ULP private data (after the IRD/ORD word for the
	// enhanced codes). Absent (nil) in a Terminate. After parseControl it
	// aliases the parsed buffer.
	PrivateData []byte
}

// parseControl parses a DDP Stream Session Control chunk payload, which is
// all of b. It rejects unknown function codes (*unknownFunctionError),
// private data longer than 512 octets (errPrivateDataTooLong), a Terminate
// with private data (errTerminateWithData) and an enhanced message without
// the IRD/ORD word (errMissingIRDORD).
func parseControl(b []byte) (controlMsg, int, error) {
	if len(b) < controlHeaderLen {
		return controlMsg{}, 0, fmt.Errorf("%w: session control of %d octets", errTruncated, len(b))
	}
	c := controlMsg{
		SSN:      binary.BigEndian.Uint16(b),
		Function: FunctionCode(binary.BigEndian.Uint16(b[2:])),
	}
	pd := b[controlHeaderLen:]
	if !c.Function.isValid() {
		return controlMsg{}, 0, &unknownFunctionError{Code: c.Function}
	}
	if len(pd) > maxPrivateData {
		return controlMsg{}, 0, fmt.Errorf("%w: %d octets in %v", errPrivateDataTooLong, len(pd), c.Function)
	}
	switch {
	case c.Function == FuncTerminate:
		if len(pd) != 0 {
			return controlMsg{}, 0, fmt.Errorf("%w: %d octets", errTerminateWithData, len(pd))
		}
	case c.Function.isEnhanced():
		w, n, err := iwarp.ParseIRDORD(pd)
		if err != nil {
			return controlMsg{}, 0, fmt.Errorf("%w: %v: %w", errMissingIRDORD, c.Function, err)
		}
		c.IRDORD = w
		c.PrivateData = pd[n:]
	default:
		c.PrivateData = pd
	}
	return c, len(b), nil
}

// Len returns the encoded length of the message.
func (c controlMsg) wireLen() int {
	n := controlHeaderLen + len(c.PrivateData)
	if c.Function.isEnhanced() {
		n += iwarp.IRDORDLen
	}
	return n
}

// Validate reports whether c can be sent: a defined function code, no
// private data in a Terminate, at most 512 octets of private data
// including the IRD/ORD word, and IRD/ORD values that fit 14 bits.
func (c controlMsg) validate() error {
	if !c.Function.isValid() {
		return &unknownFunctionError{Code: c.Function}
	}
	if c.Function == FuncTerminate && len(c.PrivateData) != 0 {
		return errTerminateWithData
	}
	if c.wireLen()-controlHeaderLen > maxPrivateData {
		return fmt.Errorf("%w: %d octets", errPrivateDataTooLong, c.wireLen()-controlHeaderLen)
	}
	if c.Function.isEnhanced() {
		return c.IRDORD.Validate()
	}
	return nil
}

// Append appends the encoded message to b. It allocates nothing when b has
// capacity for Len more octets. Append does not validate; call Validate
// first for values that did not come from parseControl.
func (c controlMsg) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, c.SSN)
	b = binary.BigEndian.AppendUint16(b, uint16(c.Function))
	if c.Function.isEnhanced() {
		b = c.IRDORD.Append(b)
	}
	return append(b, c.PrivateData...)
}
