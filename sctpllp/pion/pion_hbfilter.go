package pion

import (
	"github.com/sctp-rdma/sctp-rdma/pmtu"
)

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
//
// It returns pkt unchanged (changed false) when there is nothing to
// remove or the packet does not parse; otherwise a new packet with a
// fresh CRC32c, which is empty (len 0) when nothing else was in it.
func stripBareHeartbeats(pkt []byte) (out []byte, changed bool) {
	if len(pkt) < pmtu.SCTPCommonHeaderLen {
		return pkt, false
	}
	// First pass: is there anything to strip?
	found := false
	for b := pkt[pmtu.SCTPCommonHeaderLen:]; len(b) > 0; {
		h, n, err := pmtu.ParseChunkHeader(b)
		if err != nil {
			return pkt, false // not ours to judge: send as is
		}
		if h.Type == pmtu.ChunkHeartbeat && h.Length < pmtu.ChunkHeaderLen+4 {
			found = true
		}
		b = b[n:]
	}
	if !found {
		return pkt, false
	}
	out = make([]byte, 0, len(pkt))
	out = append(out, pkt[:pmtu.SCTPCommonHeaderLen]...)
	for b := pkt[pmtu.SCTPCommonHeaderLen:]; len(b) > 0; {
		h, n, _ := pmtu.ParseChunkHeader(b)
		if !(h.Type == pmtu.ChunkHeartbeat && h.Length < pmtu.ChunkHeaderLen+4) {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	if len(out) == pmtu.SCTPCommonHeaderLen {
		return out[:0], true
	}
	pmtu.SetChecksum(out)
	return out, true
}
