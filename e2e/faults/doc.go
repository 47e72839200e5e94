// Package faults holds the fault suites of sctp-rdma: what the RDMAP layer
// and its LLPs do when the peer or the path fails while many work requests
// are outstanding, and whether transfers stay intact over an impaired link.
//
// Every suite asserts, per RDMAP endpoint, that each work request accepted
// by PostSend or PostRecv completes exactly once — successfully or with a
// flush error wrapping rdmap.ErrFlushed (RFC 5040 §5.4, §6.2.1: outstanding
// messages "SHOULD be considered Completed in error") — within a bounded
// time, that the endpoint reports an error naming the cause (errors.Is /
// errors.As), and that no goroutine outlives the test (goleak).
package faults

// The suites:
//
//   - TestPeerKilled_Pion, TestPeerKilled_MPA: the peer is a re-executed
//     copy of the test binary (FAULTS_CHILD selects its role) that is sent
//     SIGKILL mid-transfer, over pion SCTP with several streams and over MPA
//     over TCP.
//   - TestPeerAbort_SCTP, TestPeerReset_TCP: the peer sends an SCTP ABORT
//     (RFC 5043 §11.3) or a TCP RST (RFC 5044 §8 code 1).
//   - TestAssociationLost_Pion, TestConnectionLost_MPA (Linux, root): the
//     path between two network namespaces goes black; the association
//     (pion.Config.DeadPeerTimeout) or connection (TCP_USER_TIMEOUT) times
//     out.
//   - TestImpairedLink (Linux, root): netem-style loss, reordering,
//     duplication and delay between two namespaces; RDMA Write, Read and
//     Send of a few MB complete with intact data, over pion SCTP (several
//     streams at once) and MPA over TCP.
//
// The impaired link is tc netem on a veth pair when the kernel has
// sch_netem, and otherwise a userspace emulation of the same netem model
// between two TUN devices (link_linux_test.go); the test log says which.
// docs/security.md ("Faults") lists the expected behaviour and the
// measured detection times.
