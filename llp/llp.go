// Package llp defines the Lower Layer Protocol interface that the DDP layer
// (RFC 5041) runs on, and the errors an LLP reports upward.
//
// The dependency direction of the module is one-way:
//
//	rdmap → ddp → llp ← sctpllp, mpa
package llp

// An LLP implementation (the RFC 5043 SCTP adaptation in package sctpllp,
// MPA over TCP in package mpa, or the in-process pair in internal/llptest) hands
// the DDP layer one established DDP Stream as a [Stream]. Connection set-up
// (SCTP session control, MPA Request/Reply, private data, IRD/ORD
// negotiation) belongs to the LLP package that performs it; by the time a
// Stream exists the stream is in RDMA mode (RFC 5040 §6.1).

// RFC 5041 §3 lists what DDP requires of its LLP: reliable delivery, in-order
// delivery of segments within a stream (the LLP may re-sequence, as RFC 5043
// does with the DDP-SSN), segment boundaries preserved, and the maximum ULPDU
// (MULPDU) made known to DDP. Stream captures exactly that.

import (
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// Stream is one established DDP Stream as provided by a Lower Layer Protocol
// (RFC 5041 §3, §6.1).
//
// SendSegment may be called from one goroutine at a time (the DDP sender
// serialises); MULPDU, Close and Abort may be called from any goroutine.
type Stream interface {
	// MULPDU returns the largest DDP segment (DDP header plus ULP payload, in
	// octets) the LLP accepts at this moment (RFC 5041 §5.2, RFC 5043 §9,
	// RFC 5044 §5). It can change during the life of the stream as the path
	// MTU changes: the DDP sender asks again for every segment.
	MULPDU() int

	// SendSegment transmits one DDP segment, hdr followed by payload, as a
	// single LLP unit (one SCTP DATA chunk, one MPA FPDU). It blocks while
	// the LLP applies flow control. Neither slice is retained after it
	// returns. A segment longer than MULPDU is rejected with an error
	// wrapping ErrSegmentTooLarge (RFC 5043 §9).
	SendSegment(hdr, payload []byte) error

	// Start begins delivery of received DDP segments to h. It must be called
	// exactly once. The LLP calls h from a single goroutine at a time, with
	// segments in the order the peer submitted them, and calls
	// h.HandleClosed exactly once when delivery ends.
	Start(h Handler)

	// Close performs the LLP's graceful teardown of this DDP Stream after
	// every segment already passed to SendSegment has been handed to the
	// transport (RFC 5041 §6.2.1; for RFC 5043 a DDP Stream Session
	// Terminate, for MPA a TCP FIN). It does not wait for the peer.
	Close() error

	// Abort tears the stream down at once, discarding what is queued
	// (RFC 5041 §6.2.2). Used after an RDMAP Terminate has been sent, or when
	// the local user aborts.
	Abort() error

	// Info describes the stream for diagnostics and statistics.
	Info() Info
}

// Batcher is implemented by a Stream that can gather segments and hand
// them to its transport together: MPA writes several FPDUs with one
// writev, as Linux siw sends a message's FPDUs with MSG_MORE, instead of
// one system call and one pushed TCP segment each; sctp-native bundles
// them into as few packets, and those into as few system calls, as it
// can. The DDP sender uses it for every segment of a message but the
// last, and for whole messages that more follow at once
// (ddp.Sender.SendUntaggedMore: RDMAP's Read Requests posted together).
type Batcher interface {
	// SendSegmentMore is SendSegment for a segment that more segments
	// follow at once. The LLP may hold the segment until a segment comes
	// through SendSegment, until Flush, or until it has gathered enough,
	// and keeps payload, never hdr, until then: the payload must stay
	// unchanged until that SendSegment or Flush returns. Close sends
	// what is held; Abort discards it. An error of a held segment is
	// returned by a later call.
	SendSegmentMore(hdr, payload []byte) error
	// Flush sends what SendSegmentMore holds, if anything.
	Flush() error
}

// Handler receives what an LLP delivers for one DDP Stream.
type Handler interface {
	// HandleSegment is called once per received DDP segment, in order. seg
	// is only valid during the call: the LLP reuses its memory afterwards.
	// A non-nil return tells the LLP that the stream is broken: it stops
	// delivering further segments of this stream (RFC 5041 §7.1: "DDP MUST
	// silently drop any subsequent incoming DDP Segments") but keeps the
	// sending direction open, so that the ULP can still send its Terminate.
	HandleSegment(seg []byte) error

	// HandleClosed is called exactly once, after the last HandleSegment,
	// when the receiving side of the stream ends. err is nil after a
	// graceful teardown by the peer, otherwise the cause; an *Error carries
	// the LLP's Terminate error type and code (RFC 5040 §4.8, layer 2).
	HandleClosed(err error)
}

// Info is a snapshot of an LLP stream's identity and counters.
type Info struct {
	// Kind names the LLP ("sctp-pion", "sctp-kernel", "mpa", "pipe").
	Kind string
	// StreamID is the SCTP stream identifier for RFC 5043, 0 otherwise.
	StreamID uint16
	// LocalAddr and RemoteAddr are the transport addresses, if any.
	LocalAddr, RemoteAddr string
	// SegmentsSent and SegmentsReceived count DDP segments.
	SegmentsSent, SegmentsReceived uint64
	// BytesSent and BytesReceived count DDP segment octets.
	BytesSent, BytesReceived uint64
}

// A Stream whose transport sends packets of one size together at less
// cost (sctp-native: a run of packets goes to UDP segmentation offload
// with one system call, and a packet shorter than the others ends it) may
// also have a method WireSize(n int) int: the octets a segment of n
// octets (DDP header and payload) takes in its packet, padding included,
// or 0 where sizes do not matter. The DDP sender then cuts a message into
// segments whose packets are all of one size, where that takes no more
// segments than cutting at the MULPDU (ddp.Sender, evenCut).

// Floored is implemented by a Stream whose MULPDU never falls below a
// fixed value, as an RFC 5043 adaptation's never falls below
// iwarp.SCTPMinMULPDU (RFC 5043 §9): a DDP sender sends a segment that fits
// in the floor without asking MULPDU, whose answer it could not change.
// MPA's MULPDU
// follows the TCP segment size (RFC 5044 §5) and has no such floor.
type Floored interface {
	// MULPDUFloor returns the value MULPDU never falls below (0: none).
	MULPDUFloor() int
}

// Sentinel errors shared by all LLP implementations. Implementations wrap
// them, so test with errors.Is.
var (
	// ErrClosed reports use of a stream after Close or Abort, or after the
	// peer tore it down.
	ErrClosed = errors.New("llp: stream closed")
	// ErrSegmentTooLarge reports a segment longer than MULPDU (RFC 5043 §9).
	ErrSegmentTooLarge = errors.New("llp: segment larger than MULPDU")
	// ErrAborted reports that the LLP stream or association was torn down
	// abortively (SCTP ABORT, TCP RST, peer gone).
	ErrAborted = errors.New("llp: stream aborted")
)

// Error is an error detected by the LLP that maps onto an RDMAP Terminate of
// layer 2 (LLP), RFC 5040 §4.8 Figure 9; for MPA the type and code are those
// of RFC 5044 §8 and RFC 6581 §4.
type Error struct {
	// EType is the 4-bit Terminate error type.
	EType uint8
	// Code is the 8-bit Terminate error code.
	Code uint8
	// Err is the underlying cause, if any.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("llp error (type %#x, code %#02x)", e.EType, e.Code)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// TermCode returns the Terminate code (Layer 2, LLP) that reports e
// (RFC 5040 §4.8 Figure 9).
func (e *Error) TermCode() iwarp.TermCode {
	return iwarp.TermCode{Layer: iwarp.LayerLLP, EType: e.EType, Code: e.Code}
}
