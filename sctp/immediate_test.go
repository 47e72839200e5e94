package sctp

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// The I bit asks for a SACK per packet only in slow start, outside Fast
// Recovery, while cwnd limits the sender (RFC 9260 §3.3.1, RFC 7053
// §4.1; see immediateSACKs).
func TestImmediateSACKsRule_RFC7053(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cwndLimited bool
		ssthresh    int
		fr          bool
		want        bool
	}{
		{"slow start, cwnd-limited", true, 1 << 20, false, true},
		{"slow start, limited by the user or the peer's window", false, 1 << 20, false, false},
		{"congestion avoidance", true, 1000, false, false},
		{"fast recovery", true, 1 << 20, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Association{paths: []*path{{cc: newCongestion(congestionConfig{MTU: 1000, SSThresh: tc.ssthresh, PeerARwnd: 1 << 20}), cwndLimited: tc.cwndLimited}}}
			if tc.fr {
				a.primaryPath().cc.OnFastRetransmit(10)
				a.primaryPath().cc.cwnd = a.primaryPath().cc.ssthresh - 1 // still slow start by the numbers
			}
			assert.Equal(t, tc.want, a.immediateSACKs())
		})
	}
}

// Over the wire: a bulk transfer's slow start sets the I bit on the DATA
// it sends while cwnd holds it back, and the receiver answers each such
// packet with a SACK; request/response traffic, which never fills cwnd,
// never sets it.
func TestImmediateSACKsInSlowStart_RFC7053(t *testing.T) {
	var mu sync.Mutex
	phase := 0
	var imm, data [2]int
	var sacks int
	cfg := &Config{MTU: 1500, Tap: func(sent bool, _, _ netip.AddrPort, pkt []byte) {
		p, err := wire.ParsePacketNoChecksum(pkt)
		if err != nil || !sent {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		it := p.Chunks()
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			switch c.Type {
			case wire.ChunkData:
				data[phase]++
				if c.Flags&wire.DataFlagImmediate != 0 {
					imm[phase]++
				}
			case wire.ChunkSACK:
				sacks++
			}
		}
	}}
	cli, srv, cr, sr := pair(t, cfg)

	// Request/response: one message at a time, each answered.
	msg := make([]byte, 1000)
	for i := range 20 {
		require.NoError(t, cli.WriteMsg(1, 0, msg[:100]))
		sr.wait(t, i+1)
		require.NoError(t, srv.WriteMsg(1, 0, msg[:100]))
		cr.wait(t, i+1)
	}
	mu.Lock()
	assert.Zero(t, imm[0], "an application-limited sender asks for no immediate SACK")
	assert.Positive(t, data[0])
	phase = 1
	mu.Unlock()

	// Bulk from the client: slow start from the initial window.
	const n = 300
	for range n {
		require.NoError(t, cli.WriteMsg(2, 0, msg))
	}
	sr.wait(t, 20+n)
	mu.Lock()
	defer mu.Unlock()
	assert.Positive(t, imm[1], "cwnd-limited slow start asks for a SACK per packet")
	assert.Less(t, imm[1], data[1], "not before cwnd limits the sender")
	st := cli.Stats()
	assert.Zero(t, st.FastRetransmits+st.T3Expiries, "loopback loses nothing")
	t.Logf("bulk: %d of %d DATA chunks with the I bit; %d SACKs from both ends", imm[1], data[1], sacks)
}
