package harness

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// ipv4 wraps payload in an IPv4 header of protocol proto.
func ipv4(proto byte, payload []byte) []byte {
	h := make([]byte, 20, 20+len(payload))
	h[0], h[9] = 0x45, proto
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
	return append(h, payload...)
}

// sctpOverUDP is an IPv4 UDP datagram carrying an SCTP packet of chunks.
func sctpOverUDP(chunks ...interface{ Append([]byte) []byte }) []byte {
	udp := make([]byte, 8)
	b := wire.AppendHeader(nil, wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: 1})
	for _, c := range chunks {
		b = c.Append(b)
	}
	wire.SetChecksum(b)
	return ipv4(17, append(udp, b...))
}

// TestSCTPStreamSelector: the head-of-line runs lose only packets that
// carry DATA of the chosen stream, bundled or not; SACKs, other streams,
// TCP and malformed packets pass.
func TestSCTPStreamSelector(t *testing.T) {
	sel := sctpStream(1)
	d := func(sid uint16) *wire.Data {
		return &wire.Data{Unordered: true, Beginning: true, Ending: true, TSN: 7, StreamID: sid, PPID: 16, UserData: []byte("segment")}
	}
	assert.True(t, sel(sctpOverUDP(d(1))))
	assert.True(t, sel(sctpOverUDP(&wire.SACK{CumTSNAck: 3, ARwnd: 1000}, d(2), d(1))), "bundled behind a SACK and another stream")
	assert.False(t, sel(sctpOverUDP(d(2))))
	assert.False(t, sel(sctpOverUDP(&wire.SACK{CumTSNAck: 3, ARwnd: 1000})))
	p := sctpOverUDP(d(1))
	p[9] = 6
	assert.False(t, sel(p), "TCP")
	assert.False(t, sel(p[:10]), "truncated IP header")
	assert.False(t, sel(sctpOverUDP(d(1))[:35]), "truncated SCTP packet")
	v6 := sctpOverUDP(d(1))
	v6[0] = 0x60
	assert.False(t, sel(v6), "not IPv4")

	// Kernel SCTP: the SCTP packet right after the IP header.
	direct := func(c interface{ Append([]byte) []byte }) []byte {
		return ipv4(132, sctpOverUDP(c)[20+8:])
	}
	assert.True(t, sel(direct(d(1))), "IP protocol 132")
	assert.False(t, sel(direct(d(2))))
	assert.False(t, sel(direct(&wire.SACK{CumTSNAck: 3, ARwnd: 1000})))
}

// TestFirstTCPConnectionSelector: the selector follows the connection
// of the first SYN it sees, both directions, and no other.
func TestFirstTCPConnectionSelector(t *testing.T) {
	seg := func(src, dst uint16, flags byte) []byte {
		tcp := make([]byte, 20)
		binary.BigEndian.PutUint16(tcp, src)
		binary.BigEndian.PutUint16(tcp[2:], dst)
		tcp[12], tcp[13] = 5<<4, flags
		return ipv4(6, tcp)
	}
	const syn, synAck, ack = 0x02, 0x12, 0x10
	sel := firstTCPConnection()
	assert.False(t, sel(seg(40000, 9000, ack)), "nothing before a SYN")
	assert.False(t, sel(seg(9000, 40000, synAck)), "a SYN-ACK does not choose")
	assert.True(t, sel(seg(40001, 9000, syn)))
	assert.True(t, sel(seg(9000, 40001, synAck)))
	assert.True(t, sel(seg(40001, 9000, ack)))
	assert.False(t, sel(seg(40002, 9000, syn)), "the second connection")
	assert.False(t, sel(seg(9000, 40002, ack)))
	assert.False(t, sel(sctpOverUDP()), "UDP")
}
