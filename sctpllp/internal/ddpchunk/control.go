// Package ddpchunk is the wire format of the RFC 5043 chunk payloads of
// package sctpllp: the DDP Segment Chunk (PPID 16, §5.2.2) and the DDP
// Stream Session Control message (PPID 17, §5.2.3, with the RFC 6581 §7
// enhanced codes and their IRD/ORD word).
package ddpchunk

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
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
func Valid(f FunctionCode) bool { return f >= FuncInitiate && f <= FuncEnhancedReject }

// Enhanced reports whether f is one of the RFC 6581 enhanced codes, whose
// private data begins with the IRD/ORD word.
func Enhanced(f FunctionCode) bool { return f >= FuncEnhancedInitiate && f <= FuncEnhancedReject }

// Base maps an enhanced code to its RFC 5043 counterpart (Enhanced Initiate
// to Initiate, ...); other codes are returned unchanged.
func Base(f FunctionCode) FunctionCode {
	if Enhanced(f) {
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

// MaxPrivateData is the largest private data of a session control message,
// the enhanced IRD/ORD word included (RFC 5043 §5.2.3, RFC 6581 §7).
const MaxPrivateData = 512

// HeaderLen is the length of the DDP-SSN and function code fields.
const HeaderLen = 4

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
type Control struct {
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
	// SSN is the DDP Source Sequence Number (RFC 5043 §5.2.1).

	SSN uint16
	// Function is the function code.
	Function FunctionCode
	// IRDORD is the enhanced connection establishment word; meaningful
	// only when Function.Enhanced().
	IRDORD iwarp.IRDORD
	// PrivateData is the ULP private data (after the IRD/ORD word for the
	// enhanced codes). Absent (nil) in a Terminate. After ParseControl it
	// aliases the parsed buffer.
	PrivateData []byte
}

// ParseControl parses a DDP Stream Session Control chunk payload, which is
// all of b. It rejects unknown function codes (*UnknownFunctionError),
// private data longer than 512 octets (ErrPrivateDataTooLong), a Terminate
// with private data (ErrTerminateWithData) and an enhanced message without
// the IRD/ORD word (ErrMissingIRDORD).
func ParseControl(b []byte) (Control, int, error) {
	if len(b) < HeaderLen {
		return Control{}, 0, fmt.Errorf("%w: session control of %d octets", ErrTruncated, len(b))
	}
	c := Control{
		SSN:      binary.BigEndian.Uint16(b),
		Function: FunctionCode(binary.BigEndian.Uint16(b[2:])),
	}
	pd := b[HeaderLen:]
	if !Valid(c.Function) {
		return Control{}, 0, &UnknownFunctionError{Code: c.Function}
	}
	if len(pd) > MaxPrivateData {
		return Control{}, 0, fmt.Errorf("%w: %d octets in %v", ErrPrivateDataTooLong, len(pd), c.Function)
	}
	switch {
	case c.Function == FuncTerminate:
		if len(pd) != 0 {
			return Control{}, 0, fmt.Errorf("%w: %d octets", ErrTerminateWithData, len(pd))
		}
	case Enhanced(c.Function):
		w, n, err := iwarpwire.ParseIRDORD(pd)
		if err != nil {
			return Control{}, 0, fmt.Errorf("%w: %v: %w", ErrMissingIRDORD, c.Function, err)
		}
		c.IRDORD = w
		c.PrivateData = pd[n:]
	default:
		c.PrivateData = pd
	}
	return c, len(b), nil
}

// Len returns the encoded length of the message.
func (c Control) Len() int {
	n := HeaderLen + len(c.PrivateData)
	if Enhanced(c.Function) {
		n += iwarpwire.IRDORDLen
	}
	return n
}

// Validate reports whether c can be sent: a defined function code, no
// private data in a Terminate, at most 512 octets of private data
// including the IRD/ORD word, and IRD/ORD values that fit 14 bits.
func (c Control) Validate() error {
	if !Valid(c.Function) {
		return &UnknownFunctionError{Code: c.Function}
	}
	if c.Function == FuncTerminate && len(c.PrivateData) != 0 {
		return ErrTerminateWithData
	}
	if c.Len()-HeaderLen > MaxPrivateData {
		return fmt.Errorf("%w: %d octets", ErrPrivateDataTooLong, c.Len()-HeaderLen)
	}
	if Enhanced(c.Function) {
		return c.IRDORD.Validate()
	}
	return nil
}

// Append appends the encoded message to b. It allocates nothing when b has
// capacity for Len more octets. Append does not validate; call Validate
// first for values that did not come from ParseControl.
func (c Control) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, c.SSN)
	b = binary.BigEndian.AppendUint16(b, uint16(c.Function))
	if Enhanced(c.Function) {
		b = iwarpwire.AppendIRDORD(b, c.IRDORD)
	}
	return append(b, c.PrivateData...)
}

// Wire-format errors (RFC 5043 §5.2). Parse functions wrap them; test with
// errors.Is.
var (
	// ErrTruncated reports a chunk payload shorter than its fixed fields.
	ErrTruncated = errors.New("sctpllp: chunk payload truncated")
	// ErrPrivateDataTooLong reports private data longer than 512 octets,
	// the enhanced IRD/ORD word included (RFC 5043 §5.2.3, RFC 6581 §7).
	ErrPrivateDataTooLong = errors.New("sctpllp: private data longer than 512 octets")
	// ErrTerminateWithData reports a DDP Stream Session Terminate that
	// carries private data (RFC 5043 §5.2.3: it MUST NOT).
	ErrTerminateWithData = errors.New("sctpllp: session terminate carries private data")
	// ErrMissingIRDORD reports an enhanced session control message whose
	// private data is too short for the IRD/ORD word (RFC 6581 §9).
	ErrMissingIRDORD = errors.New("sctpllp: enhanced session control without IRD/ORD word")
	// ErrUnknownFunction is wrapped by *UnknownFunctionError.
	ErrUnknownFunction = errors.New("sctpllp: unknown session control function code")
)

// UnknownFunctionError reports a session control message with a function
// code that neither RFC 5043 §5.2.3 nor RFC 6581 §7 defines.
type UnknownFunctionError struct {
	// Code is the function code received.
	Code FunctionCode
}

// Error implements error.
func (e *UnknownFunctionError) Error() string {
	return fmt.Sprintf("sctpllp: unknown session control function code %#04x", uint16(e.Code))
}

// Unwrap returns ErrUnknownFunction.
func (e *UnknownFunctionError) Unwrap() error { return ErrUnknownFunction }
