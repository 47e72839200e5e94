// Package sctpllp is the SCTP adaptation of DDP (RFC 5043, with the
// enhanced session control of RFC 6581 §7): it turns one SCTP association
// into many DDP streams, one per SCTP stream pair, each an llp.Stream.
//
// NewAssociation runs it over any backend.Transport; Dial and Listen use
// the backend.Stack in Config.Stack (native.Stack, pion.Stack), so sctpllp
// imports no stack. The stacks (sctpllp/native, sctpllp/pion,
// sctpllp/kernel) meet it only through sctpllp/backend, which
// sctpllp/transporttest proves for each. Layout: docs/architecture.md.
package sctpllp
