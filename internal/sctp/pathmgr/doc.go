// Package pathmgr is the I/O-free path management of a multihomed SCTP
// association (RFC 9260 §5.4, §6.4, §8.2, §8.3; RFC 7829): per
// destination transport address a reachability state, an error counter
// and the HEARTBEAT schedule, and from them the destination of new DATA,
// of retransmissions and of each HEARTBEAT.
//
// The association owns the clock, the RTO of each path and the socket;
// it reports events (T3-rtx expiry, SACKed DATA, HEARTBEAT ACK) and asks
// which path to use. The transitions are one table (statetable.go).
package pathmgr
