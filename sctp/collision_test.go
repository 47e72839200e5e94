package sctp

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// rawPeer is a UDP socket that speaks SCTP chunk by chunk, for the cases
// a well-behaved stack never produces on its own.
type rawPeer struct {
	t    *testing.T
	pc   *net.UDPConn
	to   *net.UDPAddr
	buf  []byte
	port uint16
}

func newRawPeer(t *testing.T) *rawPeer {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	return &rawPeer{t: t, pc: pc, buf: make([]byte, 1<<16), port: defaultPort}
}

func (p *rawPeer) send(tag uint32, chunks ...[]byte) {
	b := wire.AppendHeader(nil, wire.Header{SrcPort: p.port, DstPort: defaultPort, VerificationTag: tag})
	for _, c := range chunks {
		b = append(b, c...)
	}
	wire.SetChecksum(b)
	_, err := p.pc.WriteToUDP(b, p.to)
	require.NoError(p.t, err)
}

// recv returns the next packet's header and first chunk of type want,
// skipping others.
func (p *rawPeer) recv(want wire.ChunkType) (wire.Header, wire.Chunk) {
	p.t.Helper()
	require.NoError(p.t, p.pc.SetReadDeadline(time.Now().Add(5*time.Second)))
	for {
		n, from, err := p.pc.ReadFromUDP(p.buf)
		require.NoError(p.t, err)
		p.to = from
		pkt, err := wire.ParsePacket(append([]byte(nil), p.buf[:n]...))
		require.NoError(p.t, err)
		it := pkt.Chunks()
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			if c.Type == want {
				return pkt.Header, c
			}
		}
	}
}

// TestInitCollision_RFC9260_5_2_1: an INIT reaches an association in
// COOKIE-WAIT (both ends started at once). It answers with an INIT ACK
// carrying its own Initiate Tag and Initial TSN and a cookie of its own
// signing, keeps its INIT outstanding, and the peer's COOKIE ECHO of that
// cookie establishes the one association (§5.2.4 case D, then the COOKIE
// ACK).
func TestInitCollision_RFC9260_5_2_1(t *testing.T) {
	peer := newRawPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type res struct {
		a   *Association
		err error
	}
	dialed := make(chan res, 1)
	go func() {
		a, err := Dial(ctx, "udp4", peer.pc.LocalAddr().String(), &Config{Streams: 8})
		dialed <- res{a, err}
	}()
	_, c := peer.recv(wire.ChunkInit)
	ourINIT, err := wire.ParseInit(c)
	require.NoError(t, err)

	// The peer's own INIT crosses ours.
	const peerTag, peerTSN = 0xABCDEF01, 777
	in := wire.Init{InitiateTag: peerTag, ARwnd: 1 << 20, OutboundStreams: 8, InboundStreams: 8, InitialTSN: peerTSN}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(0, in.Append(nil))
	hdr, c := peer.recv(wire.ChunkInitAck)
	assert.Equal(t, uint32(peerTag), hdr.VerificationTag, "the INIT ACK carries the peer's tag")
	ack, err := wire.ParseInit(c)
	require.NoError(t, err)
	assert.Equal(t, ourINIT.InitiateTag, ack.InitiateTag, "§5.2.1: the same Initiate Tag as our INIT")
	assert.Equal(t, ourINIT.InitialTSN, ack.InitialTSN)
	require.NotEmpty(t, ack.Params.StateCookie)

	peer.send(ack.InitiateTag, (&wire.CookieEcho{Cookie: ack.Params.StateCookie}).Append(nil))
	peer.recv(wire.ChunkCookieAck)
	r := <-dialed
	require.NoError(t, r.err)
	defer r.a.Abort()
	assert.Equal(t, stateEstablished, r.a.Stats().State)

	// The association works with the peer's tag and TSN.
	r.a.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, r.a.WriteMsg(3, 16, []byte("after the collision")))
	hdr, c = peer.recv(wire.ChunkData)
	assert.Equal(t, uint32(peerTag), hdr.VerificationTag)
	d, err := wire.ParseData(c)
	require.NoError(t, err)
	assert.Equal(t, "after the collision", string(d.UserData))
	assert.Equal(t, ourINIT.InitialTSN, d.TSN)
}

// TestOutOfTheBlue_RFC9260_8_4: a listener answers a packet for no
// association with an ABORT with the T bit (rule 8), a SHUTDOWN ACK with
// a SHUTDOWN COMPLETE with the T bit (rule 5), and keeps nothing.
func TestOutOfTheBlue_RFC9260_8_4(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer l.Close()
	peer := newRawPeer(t)
	peer.to = l.Addr().(*net.UDPAddr)
	peer.send(0x1234, (&wire.Heartbeat{Info: []byte("hb")}).Append(nil))
	hdr, c := peer.recv(wire.ChunkAbort)
	assert.Equal(t, uint32(0x1234), hdr.VerificationTag)
	assert.NotZero(t, c.Flags&wire.FlagT)
	peer.send(0x1234, wire.ShutdownAck{}.Append(nil))
	_, c = peer.recv(wire.ChunkShutdownComplete)
	assert.NotZero(t, c.Flags&wire.FlagT)
	assert.Equal(t, uint64(2), l.HandshakeStats().OutOfTheBlue)
}

// TestListener_INITsKeepNoState_RFC9260_5_1_3: INITs are answered with
// INIT ACKs and leave nothing behind: no association, no goroutine.
func TestListener_INITsKeepNoState_RFC9260_5_1_3(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer l.Close()
	peer := newRawPeer(t)
	peer.to = l.Addr().(*net.UDPAddr)
	for i := range 500 {
		in := wire.Init{InitiateTag: uint32(i + 1), ARwnd: 1 << 16, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1}
		in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
		peer.send(0, in.Append(nil))
		peer.recv(wire.ChunkInitAck)
	}
	assert.Equal(t, uint64(500), l.HandshakeStats().InitAcks)
	l.mu.Lock()
	assert.Empty(t, l.assocs, "no state before a COOKIE ECHO")
	l.mu.Unlock()

	// Without the DDP indication the INIT gets an ABORT (RFC 5043 §5.1).
	in := wire.Init{InitiateTag: 9, ARwnd: 1 << 16, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1}
	peer.send(0, in.Append(nil))
	hdr, _ := peer.recv(wire.ChunkAbort)
	assert.Equal(t, uint32(9), hdr.VerificationTag)
	assert.Equal(t, uint64(1), l.HandshakeStats().RefusedALI)
}

// TestDial_InitUnanswered_RFC9260_5_1_6: an INIT that draws no answer is
// sent again with a doubling RTO, and after Max.Init.Retransmits the start
// fails with ErrHandshake.
func TestDial_InitUnanswered_RFC9260_5_1_6(t *testing.T) {
	peer := newRawPeer(t) // reads nothing
	start := time.Now()
	_, err := Dial(context.Background(), "udp4", peer.pc.LocalAddr().String(),
		&Config{MaxInitRetrans: 2, RTO: RTOConfig{Initial: 50 * time.Millisecond, Min: 50 * time.Millisecond, Max: time.Second}})
	require.ErrorIs(t, err, ErrHandshake)
	assert.GreaterOrEqual(t, time.Since(start), 350*time.Millisecond, "50 + 100 + 200 ms")
	n := 0
	require.NoError(t, peer.pc.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	for {
		if _, _, err := peer.pc.ReadFromUDP(peer.buf); err != nil {
			break
		}
		n++
	}
	assert.Equal(t, 3, n, "the INIT and two retransmissions")
}

// TestUnorderedOnly_RFC5043_10: with Config.UnorderedOnly (what every DDP
// association sets), an ordered DATA chunk aborts the association with a
// Protocol Violation naming the rule.
// establishRaw has Dial (with cfg) set up an association with a raw
// peer that answers as a listener would, with a cookie of its own and 4
// streams each way; it returns the association and the tag the peer
// must send with.
func establishRaw(t *testing.T, peer *rawPeer, cfg *Config) (*Association, uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialed := make(chan *Association, 1)
	go func() {
		a, err := Dial(ctx, "udp4", peer.pc.LocalAddr().String(), cfg)
		assert.NoError(t, err)
		dialed <- a
	}()
	_, c := peer.recv(wire.ChunkInit)
	in, err := wire.ParseInit(c)
	require.NoError(t, err)
	ack := wire.Init{Ack: true, InitiateTag: 0x5150, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 100}
	ack.Params.StateCookie = []byte("cookie")
	ack.Params.Adaptation, ack.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(in.InitiateTag, ack.Append(nil))
	peer.recv(wire.ChunkCookieEcho)
	peer.send(in.InitiateTag, wire.CookieAck{}.Append(nil))
	a := <-dialed
	require.NotNil(t, a)
	t.Cleanup(func() { _ = a.Abort() })
	return a, in.InitiateTag
}

func TestUnorderedOnly_RFC5043_10(t *testing.T) {
	peer := newRawPeer(t)
	a, tag := establishRaw(t, peer, &Config{Streams: 4, UnorderedOnly: true})
	done := make(chan error, 1)
	a.Start(func(uint16, uint32, []byte) {}, func(err error) { done <- err })
	ordered := wire.Data{TSN: 100, StreamID: 1, PPID: 16, Beginning: true, Ending: true, UserData: []byte("ordered")}
	peer.send(tag, ordered.Append(nil))
	_, c := peer.recv(wire.ChunkAbort)
	ab, err := wire.ParseAbort(c)
	require.NoError(t, err)
	assert.Contains(t, describeCauses(ab.Causes), "RFC 5043 §10")
	err = <-done
	assert.ErrorIs(t, err, ErrProtocolViolation)
}
