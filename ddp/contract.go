package ddp

// This file fixes the API between the DDP layer and the ULP above it (the
// RDMAP engine in package rdmap). RFC 5041 §5 (data transfer), §7 (errors).

import "github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"

// ULP is what the DDP receive path needs from the layer above it. The DDP
// Receiver calls these methods from the LLP's delivery goroutine, one at a
// time, in stream order.
type ULP interface {
	// TaggedTarget validates a non-empty tagged segment and returns the
	// memory its payload is placed into: exactly length octets of the
	// registered buffer named by h.STag starting at h.TO. It performs the
	// checks of RFC 5041 §7.1 for tagged segments (valid STag, associated
	// with this stream, TO and TO+length within bounds, no 64-bit wrap),
	// reporting them as *iwarpwire.DDPError with Type TypeTagged, and any checks of its own
	// (RDMAP version and opcode, access rights: RFC 5040 §7.2), reporting
	// those with its own error types. The DDP layer never writes outside the
	// returned slice. h.RsvdULP carries the RDMAP control byte.
	TaggedTarget(h *iwarpwire.DDPTaggedHeader, length int) ([]byte, error)

	// CheckUntagged lets the ULP validate an untagged segment's RsvdULP
	// (RDMAP version, opcode against QN) before the DDP layer places it.
	CheckUntagged(h *iwarpwire.DDPUntaggedHeader) error

	// Deliver hands the ULP one complete DDP message, in the order the
	// messages were sent (RFC 5041 §5.3, §5.4): it is called after every
	// segment of the message and of all earlier messages has been placed
	// and every earlier message has been delivered. A non-nil return is a
	// ULP-level error on this message (for example an invalid Read Request):
	// the DDP layer stops delivery as for a DDP error and reports it through
	// Failed with the message's last header. A Receiver made by
	// NewReceiverGuarded calls it with the ULP's lock held.
	Deliver(m *Message) error

	// Failed reports the first receive error of the stream: a DDP error
	// (*iwarpwire.DDPError) or a ULP error returned by TaggedTarget, CheckUntagged or
	// Deliver. After it, the DDP layer silently drops every further incoming
	// segment (RFC 5041 §7.1) but sending stays possible, so that the ULP
	// can send its Terminate. Called at most once.
	Failed(err *RecvError)

	// Closed reports that the LLP stream ended (nil: graceful), after the
	// last Deliver or Failed. Called exactly once.
	Closed(err error)
}

// Message is a delivered DDP message. It and its slices are valid only
// during the Deliver call, except Buffer, which is the ULP's own posted
// buffer.
type Message struct {
	// Tagged selects which header is meaningful.
	Tagged bool
	// Tag is the header of the last segment of a tagged message.
	Tag iwarpwire.DDPTaggedHeader
	// Untag is the header of the last segment of an untagged message
	// (RsvdULP, QN, MSN; MO of the last segment).
	Untag iwarpwire.DDPUntaggedHeader
	// Length is the message's total ULP payload length: for an untagged
	// message MO+payload of the last segment, for a tagged message the sum
	// of the payload lengths of its segments.
	Length int
	// FirstTO is the tagged offset of the first segment of a tagged message.
	FirstTO uint64
	// Buffer is the posted untagged buffer, sliced to Length (untagged only);
	// on a credit queue (Receiver.PostCredits) the Receiver's buffer, valid
	// until ULP.Deliver returns.
	Buffer []byte
	// Cookie is the value given with the posted untagged buffer; 0 on a
	// credit queue.
	Cookie uint64
}

// RecvError is a receive-path failure with the context RFC 5040 §4.8 needs
// for the Terminate message: the DDP header of the offending segment and
// its length.
type RecvError struct {
	// Err is the cause: *iwarpwire.DDPError for DDP errors, the ULP's own error otherwise.
	Err error
	// Header holds a copy of the offending segment's DDP header (14 octets
	// tagged, 18 untagged), or is empty if the header itself could not be
	// parsed.
	Header []byte
	// SegmentLen is the length of the offending DDP segment (header plus
	// payload), for the Terminate's DDP iwarpwire.DDPSegment Length field.
	SegmentLen int
	// Message is set when the error was returned by ULP.Deliver.
	Message *Message
}

// Error implements error.
func (e *RecvError) Error() string { return "ddp: receive: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *RecvError) Unwrap() error { return e.Err }
