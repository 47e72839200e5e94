// Package iwarpwire holds the iWARP wire layouts and helpers that only the
// module's engines (rdmap, ddp, mpa, sctpllp, pmtu and their tools) use:
// the DDP header layouts (RFC 5041 §4), the RDMAP Control and Terminate
// Control fields and queue numbers (RFC 5040 §4.1, §4.8), MPA's framing
// sizes and MULPDU (RFC 5044 §3, §4), the RFC 6581 §9 IRD/ORD word codec
// and §9.1 negotiation rules, and the DDP rows of the Terminate code space
// (RFC 5041 §7.2). The vocabulary a user or backend author needs (Terminate
// codes, opcodes, IRD/ORD limits, the RFC 5043 MULPDU floor) is package
// iwarp, which this package builds on.
package iwarpwire

import "errors"

// ErrTruncated reports input shorter than the definition being parsed.
var ErrTruncated = errors.New("iwarp: truncated input")
