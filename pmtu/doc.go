// Package pmtu tracks the path MTU of each association (and each peer
// address) and turns it into the MULPDU every Lower Layer Protocol allows,
// so that no DDP segment needs IP or SCTP fragmentation (RFC 5041 §5.2,
// RFC 5043 §9, RFC 5044 §4.5).
//
// The package has four parts:
//
//   - Arithmetic (mulpdu.go): the MULPDU of SCTP (native and over UDP,
//     RFC 5043 §9, RFC 6951 §5) and of MPA over TCP (RFC 5044 §4.5) for a
//     path MTU or TCP MSS.
//   - State (path.go): a [Path] holds the current path MTU of one peer
//     address with the statistics of its changes; a [Table] keys paths by
//     peer address.
//   - Kernel views (sockopt_linux.go): IP_MTU / IPV6_MTU on a connected UDP
//     socket, TCP_MAXSEG on a connected TCP socket, SCTP_STATUS on a kernel
//     SCTP socket.
//   - Userspace SCTP over UDP (conn.go, dplpmtud.go and the wire files
//     sctphdr.go, chunkhdr.go, heartbeat.go): a [Conn] wraps the UDP socket
//     under github.com/pion/sctp, turns path MTU discovery on
//     (IP_PMTUDISC_DO), takes EMSGSIZE and ICMP "fragmentation needed" into
//     account, re-bundles SCTP packets to the current path MTU and runs
//     Datagram Packetization Layer PMTU Discovery (RFC 8899) with padded
//     HEARTBEAT probes for paths that drop large packets silently.
//
// See docs/pmtu.md for the mechanism per LLP and the measured convergence
// times.
package pmtu
