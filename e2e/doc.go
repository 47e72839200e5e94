// Package e2e holds the end-to-end RDMA suite shared by every SCTP backend:
// streams.Manager and rdmap over one sctpllp.Association, written once
// against a factory of established association pairs and run over
// userspace SCTP (pion over UDP loopback, on the host), Linux kernel SCTP
// (in the test VM) and kernel↔pion over SCTP's UDP encapsulation (RFC 6951,
// in the test VM, both directions). The package has only tests.
package e2e

// The suite (Run, in suite_test.go) checks, over one association:
//   - many DDP streams running concurrently, each performing every RDMAP
//     operation (Send, Send with SE, Send with Invalidate, RDMA Write, RDMA
//     Read, Atomic FetchAdd and CmpSwap, Immediate Data, Write with
//     Immediate) with random sizes and byte-for-byte verification at both
//     ends: the workload of internal/tools/workload;
//   - one stream broken by a malformed DDP segment (a tagged segment for an
//     STag the peer never advertised): the peer's Terminate carries DDP
//     layer / tagged buffer error / invalid STag (RFC 5041 §7.2) and the
//     offending header, the stream is labelled erroneous on both sides
//     (RFC 5040 §7) and every other stream completes;
//   - that the association shuts down by itself once every stream is
//     closed or erroneous (RFC 5040 §7, RFC 5043 §6.4), on both sides.
