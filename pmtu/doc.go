// Package pmtu turns a path MTU (or TCP MSS) into the MULPDU every Lower
// Layer Protocol allows, so that no DDP segment needs IP or SCTP
// fragmentation (RFC 5041 §5.2, RFC 5043 §9, RFC 6951 §5, RFC 5044 §4.5).
//
// Tracking the path MTU itself (IP_MTU, ICMP, RFC 8899 probing) is the
// SCTP stacks' business: internal/sctp/dplpmtud, used by package sctp and
// the pion backend. See docs/pmtu.md for the mechanism per LLP.
package pmtu
