package ddp

import (
	"errors"
	"fmt"
)

// Layer is the value of the Layer field of an RDMAP Terminate control field
// for an error detected by the DDP layer (RFC 5040 §4.8, Figure 9: 0 RDMA,
// 1 DDP, 2 LLP). The RDMAP layer combines it with [Error.Type] (EType) and
// [Error.Code].
const Layer uint8 = 1

// ErrorType is the 4-bit DDP Error Type of RFC 5041 §7.2.
type ErrorType uint8

// DDP Error Types, RFC 5041 §7.2.
const (
	// TypeLocalCatastrophic (0x0) is a catastrophic error local to the
	// receiving endpoint; its only code is CodeLocalCatastrophic.
	TypeLocalCatastrophic ErrorType = 0x0
	// TypeTagged (0x1) is a Tagged Buffer error.
	TypeTagged ErrorType = 0x1
	// TypeUntagged (0x2) is an Untagged Buffer error.
	TypeUntagged ErrorType = 0x2
	// TypeLLP (0x3) is reserved for use by the LLP (RFC 5041 §7.2); the DDP
	// layer itself never produces it.
	TypeLLP ErrorType = 0x3
)

// String returns the RFC 5041 §7.2 description of the type.
func (t ErrorType) String() string {
	switch t {
	case TypeLocalCatastrophic:
		return "local catastrophic"
	case TypeTagged:
		return "tagged buffer error"
	case TypeUntagged:
		return "untagged buffer error"
	case TypeLLP:
		return "LLP error"
	}
	return fmt.Sprintf("reserved error type %#x", uint8(t))
}

// Error Code of TypeLocalCatastrophic, RFC 5041 §7.2.
const (
	// CodeLocalCatastrophic (0x00): local catastrophic error.
	CodeLocalCatastrophic uint8 = 0x00
)

// Error Codes of TypeTagged, RFC 5041 §7.2 (checks of §7.1, tagged).
const (
	// CodeInvalidSTag (0x00): Invalid STag (§7.1 tagged check 1).
	CodeInvalidSTag uint8 = 0x00
	// CodeBaseBounds (0x01): Base or bounds violation (tagged checks 3, 4).
	CodeBaseBounds uint8 = 0x01
	// CodeSTagNotAssociated (0x02): STag not associated with DDP Stream
	// (tagged checks 1, 2; RFC 5041 §8.2).
	CodeSTagNotAssociated uint8 = 0x02
	// CodeTOWrap (0x03): TO wrap (tagged check 5).
	CodeTOWrap uint8 = 0x03
	// CodeTaggedVersion (0x04): Invalid DDP version (RFC 5041 §4.1 DV).
	CodeTaggedVersion uint8 = 0x04
)

// Error Codes of TypeUntagged, RFC 5041 §7.2 (checks of §7.1, untagged).
const (
	// CodeInvalidQN (0x01): Invalid QN (§7.1 untagged check 1).
	CodeInvalidQN uint8 = 0x01
	// CodeNoBuffer (0x02): Invalid MSN - no buffer available (check 2).
	CodeNoBuffer uint8 = 0x02
	// CodeMSNRange (0x03): Invalid MSN - MSN range is not valid (check 5).
	CodeMSNRange uint8 = 0x03
	// CodeInvalidMO (0x04): Invalid MO (check 3).
	CodeInvalidMO uint8 = 0x04
	// CodeMessageTooLong (0x05): DDP Message too long for available buffer
	// (check 4).
	CodeMessageTooLong uint8 = 0x05
	// CodeUntaggedVersion (0x06): Invalid DDP version (RFC 5041 §4.1 DV).
	CodeUntaggedVersion uint8 = 0x06
)

// CodeName returns the RFC 5041 §7.2 description of code within type t.
func CodeName(t ErrorType, code uint8) string {
	switch t {
	case TypeLocalCatastrophic:
		if code == CodeLocalCatastrophic {
			return "local catastrophic"
		}
	case TypeTagged:
		switch code {
		case CodeInvalidSTag:
			return "invalid STag"
		case CodeBaseBounds:
			return "base or bounds violation"
		case CodeSTagNotAssociated:
			return "STag not associated with DDP stream"
		case CodeTOWrap:
			return "TO wrap"
		case CodeTaggedVersion:
			return "invalid DDP version"
		}
	case TypeUntagged:
		switch code {
		case CodeInvalidQN:
			return "invalid QN"
		case CodeNoBuffer:
			return "invalid MSN - no buffer available"
		case CodeMSNRange:
			return "invalid MSN - MSN range is not valid"
		case CodeInvalidMO:
			return "invalid MO"
		case CodeMessageTooLong:
			return "DDP message too long for available buffer"
		case CodeUntaggedVersion:
			return "invalid DDP version"
		}
	case TypeLLP:
		return fmt.Sprintf("LLP code %#02x", code)
	}
	return fmt.Sprintf("unknown code %#02x", code)
}

// ValidCode reports whether (t, code) is a row of RFC 5041 §7.2 that the
// DDP layer or its ULP may report. TypeLLP is reserved for the LLP and is
// not valid here.
func ValidCode(t ErrorType, code uint8) bool {
	switch t {
	case TypeLocalCatastrophic:
		return code == CodeLocalCatastrophic
	case TypeTagged:
		return code <= CodeTaggedVersion
	case TypeUntagged:
		return code >= CodeInvalidQN && code <= CodeUntaggedVersion
	}
	return false
}

// Error is a DDP error with its RFC 5041 §7.2 Error Type and Error Code.
// The ULP's tagged-buffer checks (ULP.TaggedTarget) report the same type.
//
// errors.Is(err, target) with a target *Error matches any *Error in err's
// chain with the same Type and Code, so the prototypes below (ErrInvalidSTag,
// ErrNoBuffer, ...) can be used as sentinels; errors.As(err, &e) with
// e *Error extracts the error for a Terminate message (RFC 5040 §4.8).
type Error struct {
	// Type is the 4-bit DDP Error Type.
	Type ErrorType
	// Code is the 8-bit DDP Error Code.
	Code uint8
	// Err is the detailed cause, if any.
	Err error
}

// NewError returns an *Error of type t and code wrapping cause (may be nil).
func NewError(t ErrorType, code uint8, cause error) *Error {
	return &Error{Type: t, Code: code, Err: cause}
}

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("ddp: %s (type %#x, code %#02x): %s", e.Type, uint8(e.Type), e.Code, CodeName(e.Type, e.Code))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Type and Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Type == e.Type && t.Code == e.Code
}

// AsError returns the first *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Prototype errors, one per row of RFC 5041 §7.2, for errors.Is. They carry
// no cause; do not modify them.
var (
	// ErrLocalCatastrophic matches every *Error of Type 0x0 Code 0x00: local catastrophic.
	ErrLocalCatastrophic = &Error{Type: TypeLocalCatastrophic, Code: CodeLocalCatastrophic}
	// ErrInvalidSTag matches every *Error of Type 0x1 Code 0x00: invalid STag.
	ErrInvalidSTag = &Error{Type: TypeTagged, Code: CodeInvalidSTag}
	// ErrBaseBounds matches every *Error of Type 0x1 Code 0x01: base or bounds violation.
	ErrBaseBounds = &Error{Type: TypeTagged, Code: CodeBaseBounds}
	// ErrSTagNotAssociated matches every *Error of Type 0x1 Code 0x02: STag not associated with DDP Stream.
	ErrSTagNotAssociated = &Error{Type: TypeTagged, Code: CodeSTagNotAssociated}
	// ErrTOWrap matches every *Error of Type 0x1 Code 0x03: TO wrap.
	ErrTOWrap = &Error{Type: TypeTagged, Code: CodeTOWrap}
	// ErrTaggedVersion matches every *Error of Type 0x1 Code 0x04: invalid DDP version (tagged).
	ErrTaggedVersion = &Error{Type: TypeTagged, Code: CodeTaggedVersion}
	// ErrInvalidQN matches every *Error of Type 0x2 Code 0x01: invalid QN.
	ErrInvalidQN = &Error{Type: TypeUntagged, Code: CodeInvalidQN}
	// ErrNoBuffer matches every *Error of Type 0x2 Code 0x02: invalid MSN - no buffer available.
	ErrNoBuffer = &Error{Type: TypeUntagged, Code: CodeNoBuffer}
	// ErrMSNRange matches every *Error of Type 0x2 Code 0x03: invalid MSN - MSN range is not valid.
	ErrMSNRange = &Error{Type: TypeUntagged, Code: CodeMSNRange}
	// ErrInvalidMO matches every *Error of Type 0x2 Code 0x04: invalid MO.
	ErrInvalidMO = &Error{Type: TypeUntagged, Code: CodeInvalidMO}
	// ErrMessageTooLong matches every *Error of Type 0x2 Code 0x05: DDP message too long for available buffer.
	ErrMessageTooLong = &Error{Type: TypeUntagged, Code: CodeMessageTooLong}
	// ErrUntaggedVersion matches every *Error of Type 0x2 Code 0x06: invalid DDP version (untagged).
	ErrUntaggedVersion = &Error{Type: TypeUntagged, Code: CodeUntaggedVersion}
)

// Causes wrapped inside *Error values (and returned by the local API), for
// errors.Is.
var (
	// ErrTruncated: a segment shorter than its DDP header. RFC 5041 §7.2
	// has no row for it; the receiver reports it as TypeLocalCatastrophic
	// (see Receiver).
	ErrTruncated = errors.New("ddp: segment shorter than its DDP header")
	// ErrVersion: the DV field is not 1 (RFC 5041 §4.1).
	ErrVersion = errors.New("ddp: DDP version is not 1")
	// ErrNotTagged: ParseTaggedHeader was given a header with T clear
	// (RFC 5041 §4.1).
	ErrNotTagged = errors.New("ddp: T bit clear: not a tagged header")
	// ErrNotUntagged: ParseUntaggedHeader was given a header with T set
	// (RFC 5041 §4.1).
	ErrNotUntagged = errors.New("ddp: T bit set: not an untagged header")
	// ErrSTagChanged: a segment of a tagged message in progress names a
	// different STag (RFC 5041 §4.2: every segment of a message carries the
	// same STag), reported as CodeInvalidSTag.
	ErrSTagChanged = errors.New("ddp: STag changed within a tagged message")
	// ErrOverlap: a segment would place octets of an untagged message that
	// an earlier segment already placed, reported as CodeInvalidMO.
	ErrOverlap = errors.New("ddp: segment overlaps octets already placed")
	// ErrHole: the last segment (L=1) of an untagged message arrived while
	// octets below its MO were never placed, reported as CodeInvalidMO.
	ErrHole = errors.New("ddp: message has unplaced octets at its last segment")
	// ErrBeyondLast: octets placed beyond the end given by the last
	// segment (RFC 5041 §4.1: the L segment carries the highest MO),
	// reported as CodeInvalidMO.
	ErrBeyondLast = errors.New("ddp: octets placed beyond the last segment's end")
	// ErrIncomplete: a new message began on a queue whose previous message
	// never received its last segment, reported as CodeMSNRange.
	ErrIncomplete = errors.New("ddp: previous message on this queue incomplete")
	// ErrTargetLength: ULP.TaggedTarget returned a slice of the wrong
	// length, reported as TypeLocalCatastrophic.
	ErrTargetLength = errors.New("ddp: ULP placement target has the wrong length")

	// ErrMessageTooLarge: SendTagged/SendUntagged given more than
	// MaxMessageLen octets.
	ErrMessageTooLarge = errors.New("ddp: message longer than 2^32-1 octets")
	// ErrMULPDUTooSmall: the LLP's MULPDU cannot carry a DDP header plus one
	// octet of payload.
	ErrMULPDUTooSmall = errors.New("ddp: MULPDU too small for a DDP header and one octet")
	// ErrTOWrapSend: SendTagged's TO plus length wraps 64 bits (RFC 5041
	// §7.1 tagged check 5 would reject it at the Data Sink).
	ErrTOWrapSend = errors.New("ddp: TO plus message length wraps 64 bits")

	// ErrStopped: PostUntagged after the Receiver failed, was drained, or
	// its LLP stream closed. The wrapping error says which.
	ErrStopped = errors.New("ddp: receiver stopped")
	// ErrBadQueue: PostUntagged or Posted for a QN the Receiver does not
	// have.
	ErrBadQueue = errors.New("ddp: no such queue number")
	// ErrQueueFull: PostUntagged with 2^31 buffers already waiting on the
	// queue (the MSN space would become ambiguous, RFC 5041 §4.3).
	ErrQueueFull = errors.New("ddp: too many buffers posted on queue")
)
