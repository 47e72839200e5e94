package pion

import "github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"

// stripBareHeartbeats removes from an outgoing SCTP packet every HEARTBEAT
// chunk without its Heartbeat Info parameter. pion v1.11.3 sends such a
// chunk (length 4) as an idle RTT probe from its PTO timer
// (onPTOTimerLocked → sendActiveHeartbeatLocked: the embedded chunk
// header is marshalled, not the parameter). RFC 9260 §3.3.5 makes the
// parameter mandatory, and Linux SCTP answers the 4-octet chunk with an
// ABORT "Protocol Violation: the following chunk had invalid length",
// which killed kernel↔pion associations at random idle moments. pion
// itself ignores such a chunk unanswered, so the probe is worthless
// anyway; dropping it loses one RTT sample.
func stripBareHeartbeats(pkt []byte) (out []byte, changed bool) {
	// It returns pkt unchanged (changed false) when there is nothing to
	// remove or the packet does not parse; otherwise a new packet with a
	// fresh CRC32c, which is empty (len 0) when nothing else was in it.

	if len(pkt) < wire.HeaderLen {
		return pkt, false
	}
	bare := func(c wire.Chunk) bool { return c.Type == wire.ChunkHeartbeat && len(c.Value) < 4 }
	// First pass: is there anything to strip?
	found := false
	it := wire.NewChunkIter(pkt[wire.HeaderLen:])
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		found = found || bare(c)
	}
	if it.Err() != nil || !found {
		return pkt, false // nothing to strip, or not ours to judge: send as is
	}
	out = make([]byte, 0, len(pkt))
	out = append(out, pkt[:wire.HeaderLen]...)
	for b := pkt[wire.HeaderLen:]; len(b) > 0; {
		c, n, _ := wire.ParseChunk(b) // parsed above
		if !bare(c) {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	if len(out) == wire.HeaderLen {
		return out[:0], true
	}
	wire.SetChecksum(out)
	return out, true
}
