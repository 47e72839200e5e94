// Package capture records what a process sends and receives to a pcapng
// file that Wireshark and tshark open without configuration, with no root,
// no capture tool and bounded memory: `sctp-rdma serve|bench|ping|demo
// --pcap FILE`, or a *Writer in the library's configurations. SCTP over
// UDP is recorded as sent, MPA over TCP as the byte stream cut into
// synthesized segments, kernel SCTP as one DATA chunk per message.
// Recording never waits for the disk: a packet that does not fit the
// bounded queue is dropped and counted (Stats().Dropped). What each
// recorder shows and cannot show is in docs/wireshark.md.
package capture
