package native

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// TestDial_PeerWithoutDDPAdaptation_RFC5043_5_1: a listener whose INIT
// ACK carries no Adaptation Layer Indication (Config.NoAdaptation) is
// refused by the dialer with ErrAdaptationMismatch, and the error says
// why: the peer did not indicate DDP, its INIT ACK carried none.
func TestDial_PeerWithoutDDPAdaptation_RFC5043_5_1(t *testing.T) {
	ln, err := listen("127.0.0.1:0", Config{NoAdaptation: true, AllowMissingAdaptation: true})
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = dial(ctx, ln.Addr().String(), Config{})
	require.ErrorIs(t, err, backend.ErrAdaptationMismatch)
	assert.Contains(t, err.Error(), "peer did not indicate the DDP adaptation layer")
	assert.Contains(t, err.Error(), "its INIT ACK carried no Adaptation Layer Indication")

	// With AllowMissingAdaptation the dialer takes it and leaves the
	// decision to its caller.
	tr, err := dial(ctx, ln.Addr().String(), Config{AllowMissingAdaptation: true})
	require.NoError(t, err)
	_, ok := tr.PeerAdaptation()
	assert.False(t, ok)
	require.NoError(t, tr.Abort())
}

// initOf dials addr (a bare UDP socket) with cfg and returns the INIT the
// dialer sends.
func initOf(t *testing.T, cfg Config) wire.Init {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer pc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	dialed := make(chan error, 1)
	go func() {
		_, err := dial(ctx, pc.LocalAddr().String(), cfg)
		dialed <- err
	}()
	defer func() { cancel(); <-dialed }()
	require.NoError(t, pc.SetReadDeadline(time.Now().Add(10*time.Second)))
	buf := make([]byte, 1<<16)
	n, _, err := pc.ReadFromUDP(buf)
	require.NoError(t, err)
	pkt, err := wire.ParsePacket(buf[:n])
	require.NoError(t, err)
	it := pkt.Chunks()
	c, ok := it.Next()
	require.True(t, ok)
	require.Equal(t, wire.ChunkInit, c.Type)
	in, err := wire.ParseInit(c)
	require.NoError(t, err)
	return in
}

// TestRFC5061_4_2_6_DialerNoAdaptation: the dialer's INIT carries the DDP
// Adaptation Layer Indication by default (RFC 5043 §5.1) and none with
// Config.NoAdaptation, as the listener's INIT ACK does
// (TestRFC5061_4_2_6_ListenerNoAdaptation in package sctp); a listener
// that requires the indication refuses such a dialer, one that allows its
// absence accepts it.
func TestRFC5061_4_2_6_DialerNoAdaptation(t *testing.T) {
	in := initOf(t, Config{})
	assert.True(t, in.Params.HasAdaptation)
	assert.Equal(t, wire.AdaptationDDP, in.Params.Adaptation)
	in = initOf(t, Config{NoAdaptation: true})
	assert.False(t, in.Params.HasAdaptation)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	strict, err := listen("127.0.0.1:0", Config{})
	require.NoError(t, err)
	defer strict.Close()
	_, err = dial(ctx, strict.Addr().String(), Config{NoAdaptation: true, AllowMissingAdaptation: true})
	require.Error(t, err, "RFC 5043 §5.1: a DDP listener requires the indication")
	assert.Equal(t, uint64(1), strict.HandshakeStats().RefusedALI)

	lax, err := listen("127.0.0.1:0", Config{AllowMissingAdaptation: true})
	require.NoError(t, err)
	defer lax.Close()
	accepted := make(chan *transport, 1)
	go func() {
		if a, err := lax.accept(ctx); err == nil {
			accepted <- a
		}
	}()
	tr, err := dial(ctx, lax.Addr().String(), Config{NoAdaptation: true})
	require.NoError(t, err, "the listener indicates DDP: the dialer takes it")
	defer tr.Abort()
	srv := <-accepted
	defer srv.Abort()
	_, ok := srv.PeerAdaptation()
	assert.False(t, ok, "the listener saw no indication in the INIT")
	ind, ok := tr.PeerAdaptation()
	assert.True(t, ok)
	assert.Equal(t, uint32(backend.AdaptationIndicationDDP), ind)
}
