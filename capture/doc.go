// Package capture records what a process sends and receives to a pcapng
// file that Wireshark and tshark open without configuration, with no root,
// no capture tool and bounded memory: `sctp-rdma serve|bench|ping|demo
// --pcap FILE`, or a *Writer in the library's configurations.
//
// What each recorder shows, and what it cannot:
//
//   - Userspace SCTP over UDP (wrapPacketConn): every datagram as the socket
//     sent and received it, as IP/UDP/SCTP (RFC 6951). Wireshark decodes
//     SCTP over UDP on port 9899; for another port, "Decode As" SCTP or
//     tshark's `-d udp.port==PORT,sctp`. This is exactly the wire.
//   - MPA over TCP (Conn): the byte stream as the socket API returned it,
//     cut into TCP segments at each Read and Write, with consistent
//     sequence and acknowledgement numbers and a synthesized three-way
//     handshake and FIN, so Wireshark reassembles the stream and its
//     iWARP MPA/DDP/RDMAP dissectors decode it. The real TCP segmentation,
//     retransmissions and window are not visible.
//   - Kernel SCTP (SCTPRecorder): the user messages as the one-to-one
//     socket sent and received them, each as an IP/SCTP packet with one
//     DATA chunk (fragmented with B/E flags above 64 KiB), the real stream
//     identifier, PPID and U flag, synthetic consecutive TSNs, fixed
//     verification tags and a correct CRC32c. No handshake, SACK,
//     HEARTBEAT or retransmission is visible: the kernel does not show
//     them to the socket.
//
// Addresses are the sockets' own; an unspecified local address (a socket
// bound to 0.0.0.0 or ::) is written as the loopback address when the
// peer is on loopback, else as the unspecified address of the peer's
// family.
//
// Recording copies the packet (or its first Options.SnapLen octets) into
// a bounded queue, at most 512 packets and Options.MaxQueued octets, and
// returns: no allocation in steady state, no wait for the disk. One
// goroutine builds the headers and checksums and writes the file through
// a 1 MiB buffer. A packet that does not fit in the queue, or comes after
// Close or a write error, is dropped and counted (Stats().Dropped); the
// traffic itself is never affected.
package capture
