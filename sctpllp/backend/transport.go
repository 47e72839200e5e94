// Package backend is the contract between the SCTP adaptation of DDP
// (package sctpllp, RFC 5043) and the SCTP stacks beneath it: the Transport
// interface, its errors, and the RFC 5043 code points every stack puts on
// the wire (PPIDs, the Adaptation Layer Indication). It imports no stack and
// no part of the adaptation, so each stack (sctpllp/pion, sctpllp/kernel,
// sctpllp/native) depends on it (and on sctpllp/internal/contract, what
// only the in-tree stacks share), and sctpllp/transporttest proves a
// stack against it.
package backend

import "net"

// PPIDs of RFC 5043 §5.2.
const (
	// PPIDSegment marks a DDP Segment Chunk.
	PPIDSegment uint32 = 16
	// PPIDControl marks a DDP Stream Session Control chunk.
	PPIDControl uint32 = 17
)

// AdaptationIndicationDDP is the Adaptation Layer Indication code point of
// RFC 5043 §5.1 (parameter 0xC006 in INIT/INIT-ACK).
const AdaptationIndicationDDP uint32 = 0x00000001

// Transport is one SCTP association as the RFC 5043 adaptation (sctpllp:
// DDP-SSN, session control, re-sequencing, MULPDU) uses it: sctpllp/native,
// sctpllp/pion or sctpllp/kernel. Each method's comment is part of the
// contract; sctpllp/transporttest checks it and every backend runs that
// suite unchanged. Errors are wrapped with detail (test with errors.Is);
// after Close or Abort returns fn is not called again, and done is called
// exactly once. Optional methods the adaptation uses where present:
// MoreWriter's, TransportStats() Stats (in sctpllp.AssocStats) and
// AcceptBacklog() int (a stack that queues only that many peer-started
// streams unanswered: sctpllp.Config.MaxOpening).
type Transport interface {
	// Start begins delivery of received user messages to fn: one complete
	// message with its stream identifier and PPID (host order); b is valid
	// only during the call. Calls for one stream never overlap; no order is
	// promised (messages are unordered and re-sequenced by DDP-SSN); other
	// streams may run concurrently. When the association ends done gets
	// the cause once: nil after a graceful shutdown, llp.ErrAborted (with
	// ErrPeerUnresponsive from dead-peer detection) after an ABORT or a
	// silent peer. Start must be called exactly once.
	Start(fn func(sid uint16, ppid uint32, b []byte), done func(err error))

	// WriteMsg sends the concatenation of parts as one unordered user
	// message (U=1, RFC 5043 §10) on stream sid with ppid; parts are not
	// retained. It blocks while a send buffer is full. A message of at most
	// MaxMessage octets is never refused for its size, and up to 64 KiB +
	// 64 octets is delivered whole; longer ones may fail wrapping
	// llp.ErrSegmentTooLarge. Errors: ErrStreamRange (sid >= NumStreams,
	// the association carries on), ErrEmptyMessage, ErrAssociationClosed
	// (wraps llp.ErrClosed) once the association has ended.
	WriteMsg(sid uint16, ppid uint32, parts ...[]byte) error

	// NumStreams is the number of streams usable in each direction (the
	// association's inbound and outbound counts are equal, RFC 5043 §8).
	NumStreams() int

	// MaxMessage is the largest user message that SCTP sends in one DATA
	// chunk without SCTP or IP fragmentation on the current path: the path
	// MTU less the IP, SCTP common and DATA chunk headers (and the UDP
	// encapsulation, where used).
	MaxMessage() int

	// ResetStream closes stream sid in both directions so that its
	// identifier can be used by a later session (RFC 6525 where the stack
	// supports it); it is a no-op where the stack has no per-stream reset.
	// Errors as WriteMsg's: ErrStreamRange, ErrAssociationClosed.
	ResetStream(sid uint16) error

	// PeerAdaptation reports the Adaptation Layer Indication the peer sent
	// in INIT or INIT-ACK; ok is false if the stack cannot report it.
	PeerAdaptation() (indication uint32, ok bool)

	// Kind names the backend: "sctp-native", "sctp-pion" or "sctp-kernel".
	Kind() string

	// LocalAddr and RemoteAddr are the association's primary addresses.
	LocalAddr() net.Addr
	RemoteAddr() net.Addr

	// Close shuts the association down gracefully (SCTP SHUTDOWN): every
	// message whose WriteMsg returned nil before Close reaches the peer
	// before the peer's done(nil).
	Close() error
	// Abort ends the association at once (SCTP ABORT): unacknowledged
	// messages may be lost, a WriteMsg blocked on flow control returns
	// ErrAssociationClosed, and the peer's done gets a non-nil cause.
	Abort() error
}

// MoreWriter is implemented by a Transport that can hold a message that
// more messages follow at once and send them together (sctp-native
// sends a run of packets with one system call, UDP_SEGMENT). The
// adaptation uses it for every DDP segment of a message but the last
// (llp.Batcher).
type MoreWriter interface {
	// WriteMsgMore is WriteMsg for a message that more follow at once:
	// it may wait until the next WriteMsg. parts are not retained.
	WriteMsgMore(sid uint16, ppid uint32, parts ...[]byte) error
	// Flush sends what WriteMsgMore left waiting, if anything.
	Flush() error
}
