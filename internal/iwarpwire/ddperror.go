package iwarpwire

import (
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// DDPError is a DDP error with its RFC 5041 §7.2 Error Type and Error Code.
// The ULP's tagged-buffer checks (ULP.TaggedTarget) report the same type.
//
// errors.Is(err, target) with a target *DDPError matches any *DDPError in err's
// chain with the same Type and Code, so package ddp's prototypes of each row can be used as
// sentinels; errors.As(err, &e) with
// e *DDPError extracts the error for a Terminate message (RFC 5040 §4.8).
type DDPError struct {
	// Type is the 4-bit DDP Error Type.
	Type iwarp.DDPErrorType
	// Code is the 8-bit DDP Error Code.
	Code uint8
	// Err is the detailed cause, if any.
	Err error
}

// NewDDPError returns the *DDPError of the DDP Terminate code c (Layer 1, one of
// the iwarp.Term.DDP* rows) wrapping cause (may be nil).
func NewDDPError(c iwarp.TermCode, cause error) *DDPError {
	return &DDPError{Type: iwarp.DDPErrorType(c.EType), Code: c.Code, Err: cause}
}

// Error implements error.
func (e *DDPError) Error() string {
	s := fmt.Sprintf("ddp: %s (type %#x, code %#02x): %s", e.Type, uint8(e.Type), e.Code, DDPCodeName(e.Type, e.Code))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *DDPError) Unwrap() error { return e.Err }

// TermCode returns the Terminate code (Layer 1) that reports e
// (RFC 5040 §4.8, RFC 5041 §7.2).
func (e *DDPError) TermCode() iwarp.TermCode { return DDPTermCode(e.Type, e.Code) }

// Is reports whether target is an *DDPError with the same Type and Code.
func (e *DDPError) Is(target error) bool {
	t, ok := target.(*DDPError)
	return ok && t.Type == e.Type && t.Code == e.Code
}

// Errors of the DDP header parsers.
var (
	// ErrDDPTruncated: a segment shorter than its DDP header. RFC 5041 §7.2
	// Has no row for it; the receiver reports it as TypeLocalCatastrophic
	// (see Receiver).
	ErrDDPTruncated = errors.New("ddp: segment shorter than its DDP header")
	// ErrDDPVersion: the DV field is not 1 (RFC 5041 §4.1).
	ErrDDPVersion = errors.New("ddp: DDP version is not 1")
	// ErrNotTagged: ParseDDPTaggedHeader was given a header with T clear
	// (RFC 5041 §4.1).
	ErrNotTagged = errors.New("ddp: T bit clear: not a tagged header")
	// ErrNotUntagged: ParseDDPUntaggedHeader was given a header with T set
	// (RFC 5041 §4.1).
	ErrNotUntagged = errors.New("ddp: T bit set: not an untagged header")
)
