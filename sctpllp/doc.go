// Package sctpllp is the SCTP adaptation of DDP (RFC 5043, with the
// enhanced session control of RFC 6581 §7): it turns one SCTP association
// into many DDP streams, one per SCTP stream pair, each an llp.Stream.
//
// Layout: the wire formats (segchunk.go: DDP Segment Chunk, PPID 16;
// control.go: DDP Stream Session Control, PPID 17, carrying the RFC 6581
// §9 IRD/ORD word of package iwarp), and the adaptation written once above
// the backend.Transport interface (assoc.go: Association; session.go:
// Session and Incoming; session_sm.go: the legal sequences of RFC 5043 §6;
// reorder.go: DDP-SSN re-sequencing; stream.go: per-stream quarantine and
// erroneous label; mulpdu_grace.go: MULPDU changes).
//
// The SCTP stacks live beneath it, one package each, behind the contract
// of package sctpllp/backend, which sctpllp/transporttest proves for every
// one of them: sctpllp/native (the project's own stack, package sctp),
// sctpllp/pion (github.com/pion/sctp) and sctpllp/kernel (Linux kernel
// SCTP). NewAssociation takes a Transport of any of them; Dial and Listen
// use the backend.Stack in Config.Stack (native.Stack, pion.Stack), so
// sctpllp imports none of them.
package sctpllp
