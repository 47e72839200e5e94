package ddp

import (
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// The DDP Error Types and Codes of RFC 5041 §7.2 are rows of the one
// Terminate table of package iwarp (iwarp.TermDDPInvalidSTag, ...,
// iwarp.DDPCodeName, iwarp.ValidDDPCode); the RDMAP layer carries them in a
// Terminate with Layer iwarp.LayerDDP (RFC 5040 §4.8).

// Error is a DDP error with its RFC 5041 §7.2 Error Type and Error Code.
// The ULP's tagged-buffer checks (ULP.TaggedTarget) report the same type.
//
// errors.Is(err, target) with a target *Error matches any *Error in err's
// chain with the same Type and Code, so the prototypes below (ErrInvalidSTag,
// ErrNoBuffer, ...) can be used as sentinels; errors.As(err, &e) with
// e *Error extracts the error for a Terminate message (RFC 5040 §4.8).
type Error struct {
	// Type is the 4-bit DDP Error Type.
	Type iwarp.DDPErrorType
	// Code is the 8-bit DDP Error Code.
	Code uint8
	// Err is the detailed cause, if any.
	Err error
}

// NewError returns the *Error of the DDP Terminate code c (Layer 1, one of
// the iwarp.TermDDP* rows) wrapping cause (may be nil).
func NewError(c iwarp.TermCode, cause error) *Error {
	return &Error{Type: iwarp.DDPErrorType(c.EType), Code: c.Code, Err: cause}
}

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("ddp: %s (type %#x, code %#02x): %s", e.Type, uint8(e.Type), e.Code, iwarp.DDPCodeName(e.Type, e.Code))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// TermCode returns the Terminate code (Layer 1) that reports e
// (RFC 5040 §4.8, RFC 5041 §7.2).
func (e *Error) TermCode() iwarp.TermCode { return iwarp.DDPTermCode(e.Type, e.Code) }

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

// Prototype errors, one per row of RFC 5041 §7.2 (the iwarp.TermDDP* rows),
// for errors.Is. They carry no cause; do not modify them.
var (
	ErrLocalCatastrophic = NewError(iwarp.TermDDPLocalCatastrophic, nil)
	ErrInvalidSTag       = NewError(iwarp.TermDDPInvalidSTag, nil)
	ErrBaseBounds        = NewError(iwarp.TermDDPBaseBounds, nil)
	ErrSTagNotAssociated = NewError(iwarp.TermDDPSTagNotAssociated, nil)
	ErrTOWrap            = NewError(iwarp.TermDDPTOWrap, nil)
	ErrTaggedVersion     = NewError(iwarp.TermDDPTaggedVersion, nil)
	ErrInvalidQN         = NewError(iwarp.TermDDPInvalidQN, nil)
	ErrNoBuffer          = NewError(iwarp.TermDDPNoBuffer, nil)
	ErrMSNRange          = NewError(iwarp.TermDDPMSNRange, nil)
	ErrInvalidMO         = NewError(iwarp.TermDDPInvalidMO, nil)
	ErrMessageTooLong    = NewError(iwarp.TermDDPMessageTooLong, nil)
	ErrUntaggedVersion   = NewError(iwarp.TermDDPUntaggedVersion, nil)
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
	// ErrCreditQueue: PostUntagged on a queue of the Receiver's own
	// buffers, or PostCredits on a queue of the ULP's, or with another size
	// (Receiver.PostCredits).
	ErrCreditQueue = errors.New("ddp: queue mixes posted buffers and credits")
	// ErrQueueFull: PostUntagged with 2^31 buffers already waiting on the
	// queue (the MSN space would become ambiguous, RFC 5041 §4.3).
	ErrQueueFull = errors.New("ddp: too many buffers posted on queue")
)
