package rdmap

import (
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// The Terminate code space (RFC 5040 §4.8 Figures 8 and 9, with the DDP
// rows of RFC 5041 §7.2 and the MPA rows of RFC 5044 §8 and RFC 6581 §8)
// is defined once, in package iwarp: iwarp.TermCode and its rows
// (iwarp.Term.InvalidSTag, iwarp.Term.DDPNoBuffer, iwarp.Term.NoMatchingRTR,
// ...). This package reports every Terminate with those values.

// Sentinel errors. The engine wraps them; test with errors.Is.
var (
	// ErrFlushed marks the completion of a work request that was still
	// Posted when the Endpoint entered the error state (Terminate sent or
	// received, LLP failure, or Close). RFC 5040 §5.4, §6.2.1: "the state of
	// all outstanding RDMA Messages is indeterminate and the Messages SHOULD
	// be considered Completed in error".
	ErrFlushed = errors.New("rdmap: work request flushed")
	// ErrClosed reports use of an Endpoint, MR or PD after it was closed,
	// deregistered or deallocated.
	ErrClosed = errors.New("rdmap: closed")
	// ErrResourceLimit reports a post to a full send or receive queue, or
	// a Device limit (MaxMRs, MaxRegisteredBytes) reached (RFC 5041
	// §8.3.2 item 5: resource allocation is capped).
	ErrResourceLimit = errors.New("rdmap: resource limit reached")
	// errNotStarted reports a post or wait on an Endpoint not yet started.
	errNotStarted = errors.New("rdmap: endpoint not started")
	// ErrInvalidWR reports a malformed work request (bad opcode, missing
	// buffer, wrong immediate length, MR of another PD, ...).
	ErrInvalidWR = errors.New("rdmap: invalid work request")
	// errCQOverflow reports that a completion queue overflowed (RFC 5040
	// §8.1.1 item 10). No completion is dropped: the ones beyond the depth
	// are kept and every Endpoint feeding the CQ is terminated.
	errCQOverflow = errors.New("rdmap: completion queue overflow")
	// errTruncated reports a header shorter than its fixed length.
	errTruncated = errors.New("rdmap: header truncated")
	// errAccess reports a local protection violation (MR access rights,
	// bounds, invalid or deregistered MR) detected when posting.
	errAccess = errors.New("rdmap: local protection error")
	// errUnaligned reports an Atomic Operation whose remote TO is not a
	// multiple of 8 (RFC 7306 §5.1); it also wraps ErrInvalidWR.
	errUnaligned = errors.New("rdmap: atomic target not 8-octet aligned")
	// ErrPeerClosed reports that the peer tore the stream down gracefully
	// while work requests were outstanding.
	ErrPeerClosed = errors.New("rdmap: the peer closed the stream")
)

// protocolError is a malformed or invalid RDMAP header found by a wire
// decoder, with the Terminate code the receiver reports for it.
type protocolError struct {
	// Code is the Terminate code this error maps to.
	Code iwarp.TermCode
	// Reason describes the violated rule.
	Reason string
	// Err is an underlying sentinel such as errTruncated, if any.
	Err error
}

// Error implements error.
func (e *protocolError) Error() string {
	s := "rdmap: " + e.Reason + " [" + e.Code.String() + "]"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying sentinel.
func (e *protocolError) Unwrap() error { return e.Err }

func truncated(what string, need, have int, code iwarp.TermCode) error {
	return &protocolError{
		Code:   code,
		Reason: fmt.Sprintf("%s needs %d octets, have %d", what, need, have),
		Err:    errTruncated,
	}
}

// TerminateError is the error a user sees after an RDMAP Abortive
// Termination (RFC 5040 §6.2.1, §7.1): either a Terminate this Endpoint sent
// because it detected an error (Remote false), or one it received from the
// peer (Remote true). The header copies are those carried in (or sent in)
// the Terminate message (RFC 5040 §4.8 Figure 10).
type TerminateError struct {
	// Code is the Layer / EType / Error Code.
	Code iwarp.TermCode
	// Remote is true when the Terminate was received from the peer.
	Remote bool
	// SegmentLen is the DDP Segment Length field, if HasSegmentLen.
	SegmentLen    uint16
	HasSegmentLen bool
	// DDPHeader is the terminated DDP header (14 or 18 octets), if any.
	DDPHeader []byte
	// RDMAHeader is the terminated RDMA Read Request header (28 octets,
	// RFC 5040 §4.4), if any.
	RDMAHeader []byte
	// Err is the local cause (for a Terminate sent), or a parse error of a
	// malformed received Terminate; nil otherwise.
	Err error
}

// Error implements error.
func (e *TerminateError) Error() string {
	s := "rdmap: terminate sent: " + e.Code.String()
	if e.Remote {
		s = "rdmap: the peer terminated the stream (terminate received: " + e.Code.String() + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause, and llp.ErrAborted for a received Terminate:
// the peer ended the stream abortively (RFC 5040 §6.2.1), as an SCTP ABORT
// or TCP RST does, so errors.Is(err, llp.ErrAborted) holds for it.
func (e *TerminateError) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.Remote {
		errs = append(errs, llp.ErrAborted)
	}
	return errs
}
