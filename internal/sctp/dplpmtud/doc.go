// Package dplpmtud tracks the path MTU under the userspace SCTP stacks:
// a [Path] per peer address (a [Table] keys them), the kernel's view
// (IP_MTU, TCP_MAXSEG, SCTP_STATUS in sockopt_linux.go), the RFC 8899
// [Prober] with padded HEARTBEAT probes (RFC 4960 §3.3.5), and a [Conn]
// that wraps the UDP socket under github.com/pion/sctp: IP_PMTUDISC_DO,
// EMSGSIZE and ICMP "fragmentation needed", re-bundling packets to the
// current path MTU (RFC 4960 §6.10). Package sctp uses the Prober and
// the kernel view directly. See docs/pmtu.md.
package dplpmtud
