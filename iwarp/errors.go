package iwarp

import "errors"

var (
	// ErrInvalidIRDORD reports an IRD or ORD that does not fit the 14 bits
	// of RFC 6581 §9.
	ErrInvalidIRDORD = errors.New("iwarp: IRD/ORD does not fit 14 bits")
	// ErrInsufficientIRD reports that the peer's ORD exceeds what this end
	// can serve as IRD (RFC 6581 §9.1: "If the initiator does not have
	// sufficient resources for the required IRD, it MUST send a TERM
	// message ... Error Code 6"; the responder MAY reject likewise).
	ErrInsufficientIRD = errors.New("iwarp: insufficient IRD resources")
	// ErrNoMatchingRTR reports that no RTR option or connection model is
	// common to both ends (RFC 6581 §9.2, Terminate code 7).
	ErrNoMatchingRTR = errors.New("iwarp: no matching RTR option or connection model")
)
