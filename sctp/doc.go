// Package sctp is the project's own userspace SCTP stack (RFC 9260), run
// over UDP (RFC 6951) as a lower layer for DDP (RFC 5043).
//
// A user dials an [Association] ([Dial], [DialConn]) or accepts one from a
// [Listener] ([Listen], [AcceptConn]) and sends and receives messages on
// its streams; [Config] sets the protocol parameters. The protocol pieces
// without I/O live in unexported files, one per concern, and the packet
// codec, handshake and path MTU prober beneath internal/sctp; the source
// map is in docs/sctp-native.md.
package sctp
