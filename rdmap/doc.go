// Package rdmap implements the Remote Direct Memory Access Protocol (RDMAP,
// RFC 5040) with the RFC 7306 extensions (Atomic Operations and Immediate
// Data) on top of the DDP layer of package ddp: the verbs of an "RNIC"
// (Device, PD, MR, CQ, Endpoint, work requests and completions), and the
// engine behind an Endpoint, which validates every incoming message and
// sends exactly one Terminate on the first error (RFC 5040 §4.8, §5.4).
// An Endpoint posts work requests (PostSend, PostRecv) or runs one and
// waits (Do); a CQ is polled (Poll, PollN) or calls its handler.
package rdmap

// The package has three parts:
//
//   - Wire formats, one file per RDMAP header (control.go, readreq.go,
//     terminate.go, atomicreq.go, atomicresp.go, immediate.go), each with a
//     Parse function, Append and Len in the style of quic-go's internal/wire.
//   - The verbs resources of an "RNIC": a Device owns the STag table and the
//     atomic execution lock, a PD (protection domain) groups memory regions
//     (MR) and endpoints, a CQ collects completions.
//   - The engine: an Endpoint is one RDMAP Stream (the iWARP "QP") on one
//     llp.Stream. It implements ddp.ULP, owns a ddp.Sender and a
//     ddp.Receiver, processes the send queue in order (RFC 5040 §5.5 rule
//     13), answers RDMA Read and Atomic Requests in order from a responder
//     goroutine bounded by IRD (RFC 5040 §6.1, §5.5 rule 20), enforces ORD at
//     the requester, validates every incoming message (RFC 5040 §7.2,
//     RFC 7306 §8.2) and sends exactly one Terminate (RFC 5040 §4.8, §5.4)
//     on the first error, after which every posted work request is flushed.
//
// Conventions chosen where the RFCs leave room (each is documented where it
// is implemented):
//
//   - Tagged Offsets are zero-based: TO = BaseTO + offset into the MR, with
//     BaseTO 0 unless MROption.BaseTO is given at registration.
//   - Only RDMAP version 01b (RFC 5040) is accepted; 00b (RDMA Consortium)
//     is answered with a Terminate "Invalid RDMAP version", as Linux siw does.
//   - Remote invalidation (Send with Invalidate) requires an STag registered
//     MROption.RemoteInvalidate and bound to the receiving Endpoint
//     (MROption.Endpoint); see invalidateRemote for the Terminate codes.
