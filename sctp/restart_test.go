package sctp

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// rawAssociate runs a raw peer's handshake with listener l using its
// Initiate Tag peerTag: it returns the association l accepted and the tag
// the listener gave it (the Verification Tag of the peer's packets).
func rawAssociate(t *testing.T, peer *rawPeer, l *Listener, peerTag uint32) (*Association, uint32, []byte) {
	t.Helper()
	in := wire.Init{InitiateTag: peerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: peerTag}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(0, in.Append(nil))
	hdr, c := peer.recv(wire.ChunkInitAck)
	require.Equal(t, peerTag, hdr.VerificationTag)
	ack, err := wire.ParseInit(c)
	require.NoError(t, err)
	peer.send(ack.InitiateTag, (&wire.CookieEcho{Cookie: ack.Params.StateCookie}).Append(nil))
	hdr, _ = peer.recv(wire.ChunkCookieAck)
	require.Equal(t, peerTag, hdr.VerificationTag)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := l.Accept(ctx)
	require.NoError(t, err)
	return a, ack.InitiateTag, in.Append(nil)
}

// dataChunk is an unordered DATA chunk of stream 1.
func dataChunk(tsn uint32, s string) []byte {
	return (&wire.Data{Unordered: true, Beginning: true, Ending: true, TSN: tsn, StreamID: 1, PPID: 16, UserData: []byte(s)}).Append(nil)
}

// TestUnexpectedInit_RFC9260_5_2_2: an INIT for an established
// association, which anyone who knows the peer's address and port can
// send (its tag is zero), changes nothing: it is answered with an INIT
// ACK with a new Initiate Tag and a cookie carrying the current tags as
// Tie-Tags, the association carries on, a forged COOKIE ECHO is
// discarded, and a flood of INITs draws a bounded number of answers.
func TestUnexpectedInit_RFC9260_5_2_2(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", &Config{Streams: 4})
	require.NoError(t, err)
	defer l.Close()
	peer := newRawPeer(t)
	peer.to = l.Addr().(*net.UDPAddr)
	const peerTag = 0x0A0B0C0D
	a, tag, initPkt := rawAssociate(t, peer, l, peerTag)
	defer a.Abort()
	got := newRec()
	a.Start(got.fn, func(err error) { got.done <- err })

	// The blind INIT.
	peer.send(0, initPkt)
	hdr, c := peer.recv(wire.ChunkInitAck)
	assert.Equal(t, uint32(peerTag), hdr.VerificationTag, "addressed with the INIT's Initiate Tag")
	ack, err := wire.ParseInit(c)
	require.NoError(t, err)
	assert.NotEqual(t, tag, ack.InitiateTag, "§5.2.2: a new Initiate Tag")
	a.mu.Lock()
	ck, err := a.signer.Verify(ack.Params.StateCookie, time.Now())
	a.mu.Unlock()
	require.NoError(t, err)
	assert.Equal(t, tag, ck.LocalTieTag, "Tie-Tags: our current tag")
	assert.Equal(t, uint32(peerTag), ck.PeerTieTag, "and the peer's")
	assert.Equal(t, stateEstablished, a.Stats().State, "nothing changed")

	// A COOKIE ECHO under another tag with a cookie we did not sign.
	peer.send(0x99, (&wire.CookieEcho{Cookie: make([]byte, 80)}).Append(nil))
	// The association still takes DATA under the old tags.
	peer.send(tag, dataChunk(peerTag, "still here"))
	peer.recv(wire.ChunkSACK)
	msgs := got.wait(t, 1)
	assert.Equal(t, "still here", string(msgs[0].b))
	assert.Equal(t, stateEstablished, a.Stats().State)

	// A flood of INITs: at most the bucket's worth of answers.
	for range 200 {
		peer.send(0, initPkt)
	}
	n := 0
	require.NoError(t, peer.pc.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	for {
		k, _, err := peer.pc.ReadFromUDP(peer.buf)
		if err != nil {
			break
		}
		if p, err := wire.ParsePacket(peer.buf[:k]); err == nil {
			it := p.Chunks()
			if c, ok := it.Next(); ok && c.Type == wire.ChunkInitAck {
				n++
			}
		}
	}
	assert.LessOrEqual(t, n, unexpectedInitRate+2, "rate-limited")
	assert.Positive(t, n)
	assert.Equal(t, stateEstablished, a.Stats().State)
}

// TestPeerRestart_RFC9260_5_2_4_A: the peer restarts (a new INIT from the
// same address and port, new tags) and completes the handshake with the
// cookie of the old association's INIT ACK: the old association ends with
// ErrPeerRestarted (a DDP session does not survive a restart, RFC 5043
// §11.3), and the same COOKIE ECHO makes the new association, which the
// listener accepts and which works.
func TestPeerRestart_RFC9260_5_2_4_A(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", &Config{Streams: 4})
	require.NoError(t, err)
	defer l.Close()
	peer := newRawPeer(t)
	peer.to = l.Addr().(*net.UDPAddr)
	old, oldTag, _ := rawAssociate(t, peer, l, 0x11111111)
	ended := make(chan error, 1)
	old.Start(func(uint16, uint32, []byte) {}, func(err error) { ended <- err })

	// The restarted peer: a new Initiate Tag, the same address.
	const newPeerTag = 0x22222222
	in := wire.Init{InitiateTag: newPeerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 5000}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(0, in.Append(nil))
	_, c := peer.recv(wire.ChunkInitAck)
	ack, err := wire.ParseInit(c)
	require.NoError(t, err)
	require.NotEqual(t, oldTag, ack.InitiateTag)
	// COOKIE ECHO with DATA bundled after it (RFC 9260 §5.1).
	peer.send(ack.InitiateTag, (&wire.CookieEcho{Cookie: ack.Params.StateCookie}).Append(nil), dataChunk(5000, "after the restart"))
	hdr, _ := peer.recv(wire.ChunkCookieAck)
	assert.Equal(t, uint32(newPeerTag), hdr.VerificationTag)

	select {
	case err := <-ended:
		assert.ErrorIs(t, err, ErrPeerRestarted)
		var ae *AbortError
		require.ErrorAs(t, err, &ae)
		assert.False(t, ae.Local)
	case <-time.After(5 * time.Second):
		t.Fatal("the old association did not end")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fresh, err := l.Accept(ctx)
	require.NoError(t, err)
	defer fresh.Abort()
	got := newRec()
	fresh.Start(got.fn, func(error) {})
	msgs := got.wait(t, 1)
	assert.Equal(t, "after the restart", string(msgs[0].b), "the DATA bundled with the COOKIE ECHO")
	require.NoError(t, fresh.WriteMsg(1, 16, []byte("hello again")))
	hdr, c = peer.recv(wire.ChunkData)
	assert.Equal(t, uint32(newPeerTag), hdr.VerificationTag)
	d, err := wire.ParseData(c)
	require.NoError(t, err)
	assert.Equal(t, "hello again", string(d.UserData))
	l.mu.Lock()
	assert.Len(t, l.assocs, 1, "the old association is gone from the listener")
	assert.Equal(t, 1, l.perIP[netipAddrOf(peer)])
	l.mu.Unlock()
}

func netipAddrOf(p *rawPeer) netip.Addr {
	return p.pc.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
}
