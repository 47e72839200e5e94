package pmtu

import (
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// Header sizes (RFC 791 §3.1, RFC 8200 §3, RFC 768, RFC 4960 §3 and
// §3.3.1, RFC 5043 §4, RFC 793 §3.1). The iWARP sizes (the RFC 5043 §9
// MULPDU floor, MPA's framing) are iwarp's.
const (
	// IPv4HeaderLen is the IPv4 header without options.
	IPv4HeaderLen = 20
	// IPv6HeaderLen is the fixed IPv6 header.
	IPv6HeaderLen = 40
	// UDPHeaderLen is the UDP header of SCTP over UDP (RFC 6951 §5).
	UDPHeaderLen = 8
	// DDPSSNLen is the DDP-SSN that starts every DATA chunk payload of
	// the SCTP adaptation (RFC 5043 §5.2.1); sctpllp uses this definition.
	DDPSSNLen = 2
	// BundlingReserve is the room kept in each packet for a bundled SACK
	// (16 octets, RFC 4960 §3.3.4) with four Gap Ack Blocks: RFC 5043 §9
	// asks the MULPDU to stay below the maximum "to allow bundling of
	// Control Chunks"; sctpllp and its backends use this definition.
	BundlingReserve = 32
	// tcpHeaderLen is the TCP header without options.
	tcpHeaderLen = 20
	// ipv6MinMTU is the smallest link MTU of IPv6 (RFC 8200 §5).
	iPv6MinMTU = 1280
)

// IPHeaderLen returns the IP header length of the family.
func IPHeaderLen(ipv6 bool) int {
	if ipv6 {
		return IPv6HeaderLen
	}
	return IPv4HeaderLen
}

// sctpPacketSize is the SCTP packet (common header and chunks) that fits a
// path MTU: the MTU less the IP header and, for SCTP over UDP (RFC 6951
// §5), the UDP header.
func sctpPacketSize(pmtu int, ipv6, udp bool) int {
	n := pmtu - IPHeaderLen(ipv6)
	if udp {
		n -= UDPHeaderLen
	}
	return n
}

// SCTPMaxMessage is the largest SCTP user message sent as one DATA chunk in
// one packet of at most sctpPacketSize octets: the packet less the common
// and DATA chunk headers, rounded down to a multiple of 4 because chunks
// are padded to 4 octets (RFC 4960 §3.2). This is what
// backend.Transport.MaxMessage reports.
func SCTPMaxMessage(pmtu int, ipv6, udp bool) int {
	n := sctpPacketSize(pmtu, ipv6, udp) - wire.HeaderLen - wire.DataHeaderLen
	if n < 0 {
		return 0
	}
	return n - n%4
}

// SCTPMULPDU is the MULPDU of the RFC 5043 adaptation for a path MTU
// (RFC 5043 §9): SCTPMaxMessage less the DDP-SSN and the bundling reserve,
// never below 516. Below a path MTU of about 600 octets (IPv4) the result
// is clamped at 516 and such segments need IP fragmentation.
func SCTPMULPDU(pmtu int, ipv6, udp bool) int {
	return max(SCTPMaxMessage(pmtu, ipv6, udp)-DDPSSNLen-BundlingReserve, iwarp.SCTPMinMULPDU)
}

// MinSCTPPathMTU is the smallest path MTU whose SCTPMULPDU is at least 516
// without clamping, i.e. the smallest path on which the RFC 5043 adaptation runs
// without IP fragmentation.
func MinSCTPPathMTU(ipv6, udp bool) int {
	msg := (iwarp.SCTPMinMULPDU + DDPSSNLen + BundlingReserve + 3) &^ 3 // SCTPMaxMessage is a multiple of 4
	n := msg + wire.DataHeaderLen + wire.HeaderLen + IPHeaderLen(ipv6)
	if udp {
		n += UDPHeaderLen
	}
	return n
}

// TCPMSS is the MSS a TCP sender uses on a path MTU with optLen octets of
// TCP options in every segment (12 for the timestamps option that Linux
// enables by default, RFC 7323 §3): the value TCP_MAXSEG reports on a
// connected Linux socket (RFC 9293 §3.7.1: the MSS excludes options).
func TCPMSS(pmtu int, ipv6 bool, optLen int) int {
	return pmtu - IPHeaderLen(ipv6) - tcpHeaderLen - optLen
}
