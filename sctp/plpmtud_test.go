package sctp

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// TestPLPMTUD_RFC8899Sec6_2_1_2_PadProbes: over loopback, with no MTU set,
// the dialer starts at BASE_PLPMTU and probes lo's MTU (RFC 8899 on every
// path); at BASE it also sends the recommended probe, a HEARTBEAT and a
// PAD chunk (RFC 4820), which this stack answers (it skips the PAD chunk
// by its type's upper bits), so PAD probes are used from then on; the
// search ends at the largest UDP/IPv4 packet in two round trips.
func TestPLPMTUD_RFC8899Sec6_2_1_2_PadProbes(t *testing.T) {
	var mu sync.Mutex
	pads := 0
	tap := func(sent bool, _, _ netip.AddrPort, pkt []byte) {
		if !sent || len(pkt) < wire.HeaderLen {
			return
		}
		it := wire.NewChunkIter(pkt[wire.HeaderLen:])
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			if c.Type == wire.ChunkPad {
				mu.Lock()
				pads++
				mu.Unlock()
			}
		}
	}
	l, err := Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acc := make(chan *Association, 1)
	go func() { a, _ := l.Accept(ctx); acc <- a }()
	cli, err := Dial(ctx, "udp4", l.Addr().String(), &Config{Tap: tap})
	require.NoError(t, err)
	srv := <-acc
	require.NotNil(t, srv)
	defer func() { _ = cli.Abort(); _ = srv.Abort() }()
	waitPLPMTUD(t, cli, srv)
	for _, a := range []*Association{cli, srv} {
		st := a.Stats().PLPMTUD
		assert.Equal(t, "search-complete", st.State)
		assert.Equal(t, 65535, st.PLPMTU, "lo's MTU, capped by the largest UDP/IPv4 datagram")
		assert.True(t, st.PAD, "the peer answered a PAD probe")
		assert.Zero(t, st.ProbesLost)
		assert.Equal(t, maxUDPPayload, a.Stats().MaxPacket)
	}
	mu.Lock()
	assert.Positive(t, pads, "probes with a PAD chunk on the wire")
	mu.Unlock()
}
