package ddp

import (
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// The DDP Error Types and Codes of RFC 5041 §7.2 are rows of the one
// Terminate table of package iwarp (iwarp.Term.DDPInvalidSTag, ...,
// iwarpwire.DDPCodeName, iwarpwire.ValidDDPCode); the RDMAP layer carries them in a
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
// the iwarp.Term.DDP* rows) wrapping cause (may be nil).
func NewError(c iwarp.TermCode, cause error) *Error {
	return &Error{Type: iwarp.DDPErrorType(c.EType), Code: c.Code, Err: cause}
}

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("ddp: %s (type %#x, code %#02x): %s", e.Type, uint8(e.Type), e.Code, iwarpwire.DDPCodeName(e.Type, e.Code))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// TermCode returns the Terminate code (Layer 1) that reports e
// (RFC 5040 §4.8, RFC 5041 §7.2).
func (e *Error) TermCode() iwarp.TermCode { return iwarpwire.DDPTermCode(e.Type, e.Code) }

// Is reports whether target is an *Error with the same Type and Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Type == e.Type && t.Code == e.Code
}

// asError returns the first *Error in err's chain, if any.
func asError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Prototype errors, one per row of RFC 5041 §7.2 (the iwarp.Term.DDP* rows),
// for errors.Is. They carry no cause; do not modify them.
var (
	errLocalCatastrophic = NewError(iwarp.Term.DDPLocalCatastrophic, nil)
	errInvalidSTag       = NewError(iwarp.Term.DDPInvalidSTag, nil)
	errBaseBounds        = NewError(iwarp.Term.DDPBaseBounds, nil)
	errSTagNotAssociated = NewError(iwarp.Term.DDPSTagNotAssociated, nil)
	errTOWrap            = NewError(iwarp.Term.DDPTOWrap, nil)
	errTaggedVersion     = NewError(iwarp.Term.DDPTaggedVersion, nil)
	errInvalidQN         = NewError(iwarp.Term.DDPInvalidQN, nil)
	errNoBuffer          = NewError(iwarp.Term.DDPNoBuffer, nil)
	errMSNRange          = NewError(iwarp.Term.DDPMSNRange, nil)
	errInvalidMO         = NewError(iwarp.Term.DDPInvalidMO, nil)
	errMessageTooLong    = NewError(iwarp.Term.DDPMessageTooLong, nil)
	errUntaggedVersion   = NewError(iwarp.Term.DDPUntaggedVersion, nil)
)

// Causes wrapped inside *Error values (and returned by the local API), for
// errors.Is.
var (
	// errTruncated: a segment shorter than its DDP header. RFC 5041 §7.2
	// Has no row for it; the receiver reports it as TypeLocalCatastrophic
	// (see Receiver).
	errTruncated = errors.New("ddp: segment shorter than its DDP header")
	// errVersion: the DV field is not 1 (RFC 5041 §4.1).
	errVersion = errors.New("ddp: DDP version is not 1")
	// errNotTagged: ParseTaggedHeader was given a header with T clear
	// (RFC 5041 §4.1).
	errNotTagged = errors.New("ddp: T bit clear: not a tagged header")
	// errNotUntagged: ParseUntaggedHeader was given a header with T set
	// (RFC 5041 §4.1).
	errNotUntagged = errors.New("ddp: T bit set: not an untagged header")
	// errSTagChanged: a segment of a tagged message in progress names a
	// different STag (RFC 5041 §4.2: every segment of a message carries the
	// same STag), reported as CodeInvalidSTag.
	errSTagChanged = errors.New("ddp: STag changed within a tagged message")
	// errOverlap: a segment would place octets of an untagged message that
	// an earlier segment already placed, reported as CodeInvalidMO.
	errOverlap = errors.New("ddp: segment overlaps octets already placed")
	// errHole: the last segment (L=1) of an untagged message arrived while
	// octets below its MO were never placed, reported as CodeInvalidMO.
	errHole = errors.New("ddp: message has unplaced octets at its last segment")
	// errBeyondLast: octets placed beyond the end given by the last
	// segment (RFC 5041 §4.1: the L segment carries the highest MO),
	// reported as CodeInvalidMO.
	errBeyondLast = errors.New("ddp: octets placed beyond the last segment's end")
	// errIncomplete: a new message began on a queue whose previous message
	// never received its last segment, reported as CodeMSNRange.
	errIncomplete = errors.New("ddp: previous message on this queue incomplete")
	// errTargetLength: ULP.TaggedTarget returned a slice of the wrong
	// length, reported as TypeLocalCatastrophic.
	errTargetLength = errors.New("ddp: ULP placement target has the wrong length")

	// errMessageTooLarge: SendTagged/SendUntagged given more than
	// MaxMessageLen octets.
	errMessageTooLarge = errors.New("ddp: message longer than 2^32-1 octets")
	// errMULPDUTooSmall: the LLP's MULPDU cannot carry a DDP header plus one
	// octet of payload.
	errMULPDUTooSmall = errors.New("ddp: MULPDU too small for a DDP header and one octet")
	// errTOWrapSend: SendTagged's TO plus length wraps 64 bits (RFC 5041
	// §7.1 tagged check 5 would reject it at the Data Sink).
	errTOWrapSend = errors.New("ddp: TO plus message length wraps 64 bits")

	// errStopped: PostUntagged after the Receiver failed, was drained, or
	// its LLP stream closed. The wrapping error says which.
	errStopped = errors.New("ddp: receiver stopped")
	// errBadQueue: PostUntagged or Posted for a QN the Receiver does not
	// have.
	errBadQueue = errors.New("ddp: no such queue number")
	// errCreditQueue: PostUntagged on a queue of the Receiver's own
	// buffers, or PostCredits on a queue of the ULP's, or with another size
	// (Receiver.PostCredits).
	errCreditQueue = errors.New("ddp: queue mixes posted buffers and credits")
	// errQueueFull: PostUntagged with 2^31 buffers already waiting on the
	// queue (the MSN space would become ambiguous, RFC 5041 §4.3).
	errQueueFull = errors.New("ddp: too many buffers posted on queue")
)
