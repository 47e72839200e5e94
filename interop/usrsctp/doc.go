// Package usrsctp checks the project's SCTP stack (package sctp,
// "sctp-native") against usrsctp, an independent one (Debian's
// libusrsctp, the stack of Firefox's and Chrome's WebRTC data channels),
// both over UDP encapsulation (RFC 6951) on loopback, in both directions:
// usrsctp dialing sctp-native's Listener, and sctp-native dialing
// usrsctp's listening socket.
package usrsctp

// The usrsctp side is testdata/peer.c, this project's own small program,
// built with the system compiler at test time (scripts/usrsctp-setup.sh
// installs libusrsctp-dev and tshark) and driven line by line. The cases:
// the handshake; 1, 8 and 64 KiB messages, ordered and unordered, on
// several streams, fragmented, both ways at once, checked byte for byte;
// stream reset (RFC 6525) requested by usrsctp for its outgoing streams
// and for sctp-native's; HEARTBEAT, SHUTDOWN and ABORT each way. Each
// direction's wire is captured on lo and decoded by tshark: no malformed
// packet, no bad CRC32c, no ERROR chunk. docs/usrsctp-interop.md.
//
// The package has no non-test code beyond this documentation.
