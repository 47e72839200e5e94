package sctpllp

import (
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/reseq"
)

// Wire-format errors of package chunk that this package returns too.
var (
	errTruncated          = ddpchunk.ErrTruncated
	errPrivateDataTooLong = ddpchunk.ErrPrivateDataTooLong
)

// Session and association errors.
var (
	// errProtocol is wrapped by *protocolError: the peer broke a rule of
	// RFC 5043 (illegal session sequence, DDP-SSN window, unknown PPID).
	errProtocol = errors.New("sctpllp: protocol violation")
	// ErrSessionTerminated reports that the peer answered an Initiate with
	// a DDP Stream Session Terminate (RFC 5043 §6.4: not accepted by the
	// ULP, for example because too many Initiates were pending).
	ErrSessionTerminated = errors.New("sctpllp: session terminated by peer")
	// errErroneous reports a stream labelled erroneous (RFC 5040 §7).
	errErroneous = errors.New("sctpllp: stream labelled erroneous")
	// errIncomingDone reports a second decision on an *Incoming, or a
	// decision after the peer withdrew the Initiate.
	errIncomingDone = errors.New("sctpllp: incoming session already decided or withdrawn")
	// errCloseTimeout reports that the peer did not answer a local Session
	// Terminate within Config.Linger.
	errCloseTimeout = errors.New("sctpllp: no session terminate from peer")
	// errHeldLimit reports that a stream exceeded the bound on octets held
	// for re-sequencing (RFC 5043 §10).
	errHeldLimit = reseq.ErrHeldLimit
	// errMemoryShare reports an association aborted because what its peer
	// made this side hold (early chunks, segments before Start) did not
	// fit its share (Config.MaxHeldAssocBytes, MaxHeldAddrBytes) or the
	// process budget; the error also wraps membudget.ErrExhausted and
	// llp.ErrAborted.
	errMemoryShare = reseq.ErrMemoryShare
	// errSSNWindow reports a DDP-SSN that is a duplicate or lies more than
	// 32767 ahead of the next expected one (RFC 5043 §10).
	errSSNWindow = reseq.ErrSSNWindow
)

// protocolError is a violation of RFC 5043 by the peer, detected on one DDP
// stream. The session on that stream is terminated; other streams continue
// (RFC 5043 §6.1, §11.3). It unwraps to both errProtocol and the specific
// cause (errSSNWindow, errHeldLimit, a wire-format error, ...).
type protocolError struct {
	// StreamID is the SCTP stream identifier.
	StreamID uint16
	// Reason describes the violation.
	Reason string
	// Err is the specific cause, if any.
	Err error
}

// Error implements error.
func (e *protocolError) Error() string {
	s := fmt.Sprintf("sctpllp: protocol violation on stream %d: %s", e.StreamID, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns errProtocol and the cause.
func (e *protocolError) Unwrap() []error {
	if e.Err != nil {
		return []error{errProtocol, e.Err}
	}
	return []error{errProtocol}
}

// RejectError is returned by Open when the peer's ULP rejected the session
// with a DDP Stream Session Reject or Enhanced Reject (RFC 5043 §6.3,
// RFC 6581 §7).
type RejectError struct {
	// StreamID is the SCTP stream identifier.
	StreamID uint16
	// Enhanced is true for an Enhanced Reject (0x007).
	Enhanced bool
	// IRDORD is the responder's IRD/ORD word of an Enhanced Reject
	// (RFC 6581 §9.1: it may state the ORD the responder requires).
	IRDORD iwarp.IRDORD
	// PrivateData is the peer's ULP private data.
	PrivateData []byte
}

// Error implements error.
func (e *RejectError) Error() string {
	return fmt.Sprintf("sctpllp: session on stream %d rejected by peer (%d octets private data)",
		e.StreamID, len(e.PrivateData))
}

// AssociationError reports that the whole SCTP association ended while a
// session was open (SCTP ABORT, peer gone, local abort). It unwraps to
// llp.ErrAborted and to the transport's cause (RFC 5043 §11.3).
type AssociationError struct {
	// Err is the transport's cause; nil if none was reported.
	Err error
}

// Error implements error.
func (e *AssociationError) Error() string {
	if e.Err == nil {
		// A graceful SHUTDOWN under a session not closed first (RFC 5043
		// §6): what a peer process that died without closing leaves.
		return "sctpllp: association shut down with the stream still open"
	}
	return "sctpllp: association ended: " + e.Err.Error()
}

// Unwrap returns llp.ErrAborted and the cause.
func (e *AssociationError) Unwrap() []error {
	if e.Err != nil {
		return []error{llp.ErrAborted, e.Err}
	}
	return []error{llp.ErrAborted}
}
