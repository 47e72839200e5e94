package dplpmtud

import (
	"errors"
	"fmt"
)

// ErrUnsupported reports a kernel view that this platform or socket cannot
// give.
var ErrUnsupported = errors.New("pmtu: not supported")

// ErrShort reports a buffer too short for the structure being parsed.
var ErrShort = errors.New("pmtu: truncated")

// WireError is a malformed SCTP structure: Field names what is wrong and
// Section the RFC section that defines it.
type WireError struct {
	// What is the structure ("common header", "chunk", "heartbeat").
	What string
	// Section is the defining RFC section, e.g. "RFC 4960 §3.2".
	Section string
	// Reason describes the problem.
	Reason string
	// Err is the cause: wrapping ErrShort for truncation, a internal/sctp/wire error
	// from its parser, or nil.
	Err error
}

// Error implements error.
func (e *WireError) Error() string {
	return fmt.Sprintf("pmtu: bad SCTP %s (%s): %s", e.What, e.Section, e.Reason)
}

// Unwrap returns the cause.
func (e *WireError) Unwrap() error { return e.Err }
