// Package sctpllp is the SCTP adaptation of DDP (RFC 5043, with the
// enhanced session control of RFC 6581 §7): it turns one SCTP association
// into many DDP streams, one per SCTP stream pair, each a Session.
//
// NewAssociation runs it over any backend.Transport; Dial and Listen use
// the backend.Stack in Config.Stack (native, pion or kernel Stack), so
// sctpllp imports no stack. The stacks meet it only through sctpllp/backend
// and sctpllp/internal/contract; sctpllp/transporttest proves each against
// backend.Transport. Layout: docs/architecture.md.
package sctpllp
