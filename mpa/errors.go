package mpa

import (
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// The Terminate layer, error type and codes of MPA errors (RFC 5044 §8,
// RFC 6581 §8) are defined once, in package iwarp (iwarp.LLPETypeMPA,
// iwarp.Term.MPAConnectionLost.Code ... iwarp.Term.NoMatchingRTR.Code). Every
// *llp.Error this package returns carries one of them.

// Causes carried in the Err field of the *llp.Error values this package
// returns (test them with errors.Is), and errors of the local API.
var (
	// errBadKey: the 16-octet Key of a startup frame is not the one expected
	// (RFC 5044 §7.1.1, §7.1.2 rule 5). Code 4.
	errBadKey = errors.New("mpa: startup frame key mismatch")
	// errActiveActive: an MPA Request arrived where an MPA Reply was expected,
	// i.e. both ends started as Initiator (RFC 5044 §7.1.2 rule 8). It wraps
	// ErrBadKey. Code 4.
	errActiveActive = fmt.Errorf("%w: peer is also an Initiator (Initiator/Initiator startup)", errBadKey)
	// errRevision: the startup frame carries an MPA revision this end cannot
	// interoperate with (RFC 5044 §7.1.1 Rev, RFC 6581 §6). Code 4.
	errRevision = errors.New("mpa: unsupported MPA revision")
	// errPrivateDataLength: PD_Length exceeds 512 octets (RFC 5044 §7.1.1)
	// or the configured acceptance limit (RFC 5044 §7.1.2 rule 9), or is too
	// short for the enhanced connection establishment data (RFC 6581 §6).
	// Code 4.
	errPrivateDataLength = errors.New("mpa: invalid private data length")
	// errEnhancedMismatch: the Reply's S flag or Control Flag A does not
	// answer the Request as RFC 6581 §9.2 and §10 require. Code 4.
	errEnhancedMismatch = errors.New("mpa: enhanced connection establishment mismatch")
	// errTruncated: the input ends before the message does. Parse functions
	// return it (unwrapped, not as *llp.Error) so a stream reader knows to
	// read more.
	errTruncated = errors.New("mpa: truncated input")
	// errCRC: the FPDU's CRC32c does not match (RFC 5044 §4.4, §8 code 2).
	errCRC = errors.New("mpa: FPDU CRC32c mismatch")
	// errMarker: a Marker's FPDUPTR does not point at the FPDU's ULPDU Length
	// field (RFC 5044 §4.3, §8 code 3).
	errMarker = errors.New("mpa: marker does not point at the FPDU start")
	// ErrULPDUTooLarge: a received ULPDU Length exceeds the receive limit
	// (by default 64768, RFC 5044 §3). RFC 5044 §8 has no code of its own for
	// it: the length cannot have been produced by a conforming sender, so the
	// FPDU start is lost, which is the framing failure of code 3.
	ErrULPDUTooLarge = errors.New("mpa: ULPDU length beyond receive limit")
	// ErrConnectionLost: the TCP connection ended in the middle of an FPDU or
	// failed (RFC 5044 §8 code 1).
	ErrConnectionLost = errors.New("mpa: TCP connection lost")
	// errInvalidConfig reports a Config this package cannot use.
	errInvalidConfig = errors.New("mpa: invalid configuration")
)

// newError returns the *llp.Error for an MPA Terminate code with its cause.
func newError(c iwarp.TermCode, cause error) *llp.Error {
	return &llp.Error{EType: c.EType, Code: c.Code, Err: cause}
}

// frameError is the *llp.Error for an improperly formatted startup frame
// (RFC 5044 §8 code 4).
func frameError(cause error, format string, args ...any) *llp.Error {
	if format == "" {
		return newError(iwarp.Term.MPAInvalidFrame, cause)
	}
	return newError(iwarp.Term.MPAInvalidFrame, fmt.Errorf("%w: "+format, append([]any{cause}, args...)...))
}

// RejectError reports that the Responder's ULP rejected the connection:
// the MPA Reply Frame had R = 1 (RFC 5044 §7.1.1, §7.1.2 rule 3). The
// Initiator exits MPA; the Reply's private data (the reason) and, for an
// enhanced Reply, the Responder's IRD/ORD (RFC 6581 §9.1: passed to the ULP
// for Reject messages too) are in Reply.
type RejectError struct {
	// Reply is the received MPA Reply Frame.
	Reply Frame
}

// Error implements error.
func (e *RejectError) Error() string {
	return fmt.Sprintf("mpa: connection rejected by the responder (%d octets of private data)", len(e.Reply.PrivateData))
}

// errRejected is matched by errors.Is for every *RejectError, and is what
// the Responder side returns after it sent a rejecting Reply.
var errRejected = errors.New("mpa: connection rejected")

// Is makes errors.Is(err, ErrRejected) true for a *RejectError.
func (e *RejectError) Is(target error) bool { return target == errRejected }
