package wire

// Error is the type of the errors of this package. Those that report a
// malformed packet, chunk, parameter or cause (lengths that do not add up)
// also match ErrMalformed under errors.Is.
type Error struct {
	msg       string
	malformed bool
}

// Error returns the message.
func (e *Error) Error() string { return "internal/sctp/wire: " + e.msg }

// Is makes every malformation error match ErrMalformed.
func (e *Error) Is(target error) bool {
	return target == ErrMalformed && e.malformed
}

func malformed(msg string) *Error { return &Error{msg: msg, malformed: true} }

// The errors of this package, to be compared with errors.Is.
var (
	// ErrMalformed matches every error below that reports octets that are
	// not a well-formed SCTP packet, chunk, parameter or cause. What the
	// receiver does with such a packet is up to it; RFC 9260 §6.10 and
	// §3.3.10.13 allow discarding it or answering with an ABORT carrying
	// a Protocol Violation cause.
	ErrMalformed = malformed("malformed")
	// ErrTruncated: the octets end inside a header or a fixed field.
	ErrTruncated = malformed("truncated")
	// ErrChunkLength: a Chunk Length below 4, beyond the packet, or not
	// matching the chunk's fixed fields (RFC 9260 §3.2).
	ErrChunkLength = malformed("bad chunk length")
	// ErrParamLength: a Parameter Length below 4, beyond its chunk, or
	// wrong for the parameter's type (RFC 9260 §3.2.1).
	ErrParamLength = malformed("bad parameter length")
	// ErrCauseLength: a Cause Length below 4, beyond its chunk, or wrong
	// for the cause's code (RFC 9260 §3.3.10).
	ErrCauseLength = malformed("bad error cause length")

	// ErrChecksum: the CRC32c of the packet does not match (RFC 9260
	// §6.8: the packet is discarded silently).
	ErrChecksum = &Error{msg: "bad checksum"}
	// ErrChunkType: a Parse function was given a chunk of another type (a
	// caller's mistake, not the peer's).
	ErrChunkType = &Error{msg: "wrong chunk type"}
	// ErrCauseCode: a Cause accessor was called on a cause of another
	// code.
	ErrCauseCode = &Error{msg: "wrong error cause code"}
	// ErrTooLong: what was built does not fit the 16-bit length field of
	// a chunk (EndChunk).
	ErrTooLong = &Error{msg: "chunk longer than 65535 octets"}

	// ErrNoUserData: a DATA chunk with no user data. RFC 9260 §3.3.1: the
	// receiver answers with an ABORT carrying a No User Data cause with
	// the chunk's TSN; ParseData returns the chunk's fields with it.
	ErrNoUserData = &Error{msg: "DATA chunk without user data"}
	// ErrZeroInitiateTag: an INIT or INIT ACK whose Initiate Tag is 0. RFC
	// 9260 §3.3.2: an INIT is discarded silently; §3.3.3: an INIT ACK
	// destroys the association being set up.
	ErrZeroInitiateTag = &Error{msg: "initiate tag 0"}
	// ErrZeroStreams: an INIT or INIT ACK whose Number of Outbound Streams
	// or Number of Inbound Streams is 0. RFC 9260 §3.3.2: an INIT is
	// discarded and an ABORT SHOULD be sent; §3.3.3: in COOKIE-WAIT an
	// INIT ACK destroys the association being set up, and an ABORT SHOULD
	// be sent.
	ErrZeroStreams = &Error{msg: "zero outbound or inbound streams"}
	// ErrSmallARwnd: an INIT or INIT ACK advertising a receiver window
	// below 1500 octets (RFC 9260 §3.3.2, §3.3.3: the packet is discarded,
	// an ABORT SHOULD be sent, and no existing association changes).
	ErrSmallARwnd = &Error{msg: "a_rwnd below 1500"}
	// ErrMissingStateCookie: an INIT ACK without a State Cookie parameter
	// (RFC 9260 §3.3.3: mandatory; the receiver reports a Missing
	// Mandatory Parameter, §3.3.10.2).
	ErrMissingStateCookie = &Error{msg: "INIT ACK without a state cookie"}
	// ErrMissingHeartbeatInfo: a HEARTBEAT or HEARTBEAT ACK that does not
	// start with a Heartbeat Info parameter (RFC 9260 §3.3.5, §3.3.6).
	ErrMissingHeartbeatInfo = &Error{msg: "HEARTBEAT without heartbeat info"}
)
