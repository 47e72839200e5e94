package sctp

import (
	"context"
	"encoding/binary"
	"errors"
	"net"

	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// The tests of this file drive one association chunk by chunk from a raw
// peer, each named by the RFC section whose rule it checks.

// rawPeerTag is the Initiate Tag the raw peer of dialRaw answers with.
const rawPeerTag = 0x5150

// dialRaw has Dial (with cfg) associate with the raw peer, which answers
// as a listener would (4 streams each way, Initial TSN 100). It returns
// the association, the tag the peer sends with (our Initiate Tag) and the
// association's Initial TSN.
func dialRaw(t *testing.T, peer *rawPeer, cfg *Config) (*Association, uint32, uint32) {
	t.Helper()
	return dialRawWith(t, peer, cfg, func(uint16, uint32, []byte) {})
}

// dialRawWith is dialRaw with fn receiving the messages.
func dialRawWith(t *testing.T, peer *rawPeer, cfg *Config, fn func(uint16, uint32, []byte)) (*Association, uint32, uint32) {
	t.Helper()
	return dialRawAt(t, peer, peer.pc.LocalAddr().String(), cfg, fn)
}

// dialRawAt is dialRawWith with Dial's address given (several hosts of
// the peer's port: multihomed), the handshake on peer's socket.
func dialRawAt(t *testing.T, peer *rawPeer, addr string, cfg *Config, fn func(uint16, uint32, []byte)) (*Association, uint32, uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialed := make(chan *Association, 1)
	go func() {
		a, err := Dial(ctx, "udp4", addr, cfg)
		assert.NoError(t, err)
		dialed <- a
	}()
	_, c := peer.recv(wire.ChunkInit)
	in, err := wire.ParseInit(c)
	require.NoError(t, err)
	ack := wire.Init{Ack: true, InitiateTag: rawPeerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 100}
	ack.Params.StateCookie = []byte("cookie")
	ack.Params.Adaptation, ack.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(in.InitiateTag, ack.Append(nil))
	peer.recv(wire.ChunkCookieEcho)
	peer.send(in.InitiateTag, wire.CookieAck{}.Append(nil))
	a := <-dialed
	require.NotNil(t, a)
	t.Cleanup(func() { _ = a.Abort() })
	a.Start(fn, func(error) {})
	return a, in.InitiateTag, in.InitialTSN
}

// recvAll returns the types of the chunks the peer receives until one of
// type want (included) arrives or d passes; ok reports whether it came.
func (p *rawPeer) recvAll(want wire.ChunkType, d time.Duration) (seen []wire.ChunkType, ok bool) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		require.NoError(p.t, p.pc.SetReadDeadline(deadline))
		n, from, err := p.pc.ReadFromUDP(p.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return seen, false
		}
		require.NoError(p.t, err)
		p.to = from
		pkt, err := wire.ParsePacket(append([]byte(nil), p.buf[:n]...))
		require.NoError(p.t, err)
		it := pkt.Chunks()
		for c, more := it.Next(); more; c, more = it.Next() {
			seen = append(seen, c.Type)
			if c.Type == want {
				return seen, true
			}
		}
	}
}

// recvPkt returns the next packet's header and chunks of type want.
func (p *rawPeer) recvChunk(want wire.ChunkType, d time.Duration) (wire.Header, wire.Chunk, bool) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		require.NoError(p.t, p.pc.SetReadDeadline(deadline))
		n, from, err := p.pc.ReadFromUDP(p.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return wire.Header{}, wire.Chunk{}, false
		}
		require.NoError(p.t, err)
		p.to = from
		pkt, err := wire.ParsePacket(append([]byte(nil), p.buf[:n]...))
		require.NoError(p.t, err)
		it := pkt.Chunks()
		for c, more := it.Next(); more; c, more = it.Next() {
			if c.Type == want {
				return pkt.Header, c, true
			}
		}
	}
}

// heartbeatRoundTrip sends a HEARTBEAT and waits for its ACK: every
// packet the peer sent before it has been processed.
func heartbeatRoundTrip(t *testing.T, peer *rawPeer, tag uint32) {
	t.Helper()
	peer.send(tag, (&wire.Heartbeat{Info: []byte("sync")}).Append(nil))
	_, ok := peer.recvAll(wire.ChunkHeartbeatAck, 5*time.Second)
	require.True(t, ok, "HEARTBEAT ACK")
}

// TestRFC9260_8_5_1_B_AbortTBitOwnTag: an ABORT with the T bit set is
// accepted only with the peer's own tag; with ours (what an attacker who
// saw one of our packets has) it is discarded.
func TestRFC9260_8_5_1_B_AbortTBitOwnTag(t *testing.T) {
	peer := newRawPeer(t)
	a, tag, _ := dialRaw(t, peer, &Config{Streams: 4})
	peer.send(tag, (&wire.Abort{T: true}).Append(nil))
	heartbeatRoundTrip(t, peer, tag)
	require.Equal(t, stateEstablished, a.Stats().State, "T bit with our own tag: discarded")
	peer.send(rawPeerTag, (&wire.Abort{T: true}).Append(nil))
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("an ABORT with the T bit and the peer's tag ends the association")
	}
}

// TestRFC9260_8_5_1_C_ShutdownCompleteTBitOwnTag: in SHUTDOWN-ACK-SENT a
// SHUTDOWN COMPLETE with the T bit and our own tag is discarded; one
// without the T bit and our tag ends the association.
func TestRFC9260_8_5_1_C_ShutdownCompleteTBitOwnTag(t *testing.T) {
	peer := newRawPeer(t)
	a, tag, tsn := dialRaw(t, peer, &Config{Streams: 4})
	peer.send(tag, (&wire.Shutdown{CumTSNAck: tsn - 1}).Append(nil))
	_, ok := peer.recvAll(wire.ChunkShutdownAck, 5*time.Second)
	require.True(t, ok)
	peer.send(tag, wire.ShutdownComplete{T: true}.Append(nil))
	heartbeatRoundTrip(t, peer, tag)
	require.Equal(t, stateShutdownAckSent, a.Stats().State, "T bit with our own tag: discarded")
	peer.send(tag, wire.ShutdownComplete{}.Append(nil))
	select {
	case <-a.Done():
		require.NoError(t, a.Err())
	case <-time.After(5 * time.Second):
		t.Fatal("SHUTDOWN COMPLETE not taken")
	}
}

// TestRFC9260_8_5_1_A_BundledInitDiscarded: a packet bundling an INIT
// with another chunk (§6.10 forbids it) is discarded whole on an
// established association: no INIT ACK, nothing of the other chunk.
func TestRFC9260_8_5_1_A_BundledInitDiscarded(t *testing.T) {
	peer := newRawPeer(t)
	a, tag, _ := dialRaw(t, peer, &Config{Streams: 4})
	in := wire.Init{InitiateTag: 0x7777, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 5}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(0, in.Append(nil), (&wire.Heartbeat{Info: []byte("bundled")}).Append(nil))
	peer.send(tag, (&wire.Heartbeat{Info: []byte("x")}).Append(nil), in.Append(nil))
	heartbeatRoundTrip(t, peer, tag)
	seen, _ := peer.recvAll(wire.ChunkInitAck, 300*time.Millisecond)
	assert.NotContains(t, seen, wire.ChunkInitAck)
	// The sync round trip's own HEARTBEAT ACK is the only one.
	assert.Equal(t, uint64(2), a.Stats().BadChunks, "both packets discarded")
	assert.Equal(t, stateEstablished, a.Stats().State)
}

// TestRFC9260_8_5_1_E_ShutdownAckBeforeEstablished: a SHUTDOWN ACK in
// COOKIE-WAIT or COOKIE-ECHOED is out of the blue (§8.4 rule 5): it is
// answered with a SHUTDOWN COMPLETE with the T bit and the SHUTDOWN ACK's
// tag, and the start goes on.
func TestRFC9260_8_5_1_E_ShutdownAckBeforeEstablished(t *testing.T) {
	peer := newRawPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialed := make(chan error, 1)
	go func() {
		a, err := Dial(ctx, "udp4", peer.pc.LocalAddr().String(), &Config{Streams: 4})
		if err == nil {
			_ = a.Abort()
		}
		dialed <- err
	}()
	_, c := peer.recv(wire.ChunkInit)
	in, err := wire.ParseInit(c)
	require.NoError(t, err)

	peer.send(0x99, wire.ShutdownAck{}.Append(nil)) // COOKIE-WAIT
	hdr, c, ok := peer.recvChunk(wire.ChunkShutdownComplete, 3*time.Second)
	require.True(t, ok, "COOKIE-WAIT: SHUTDOWN COMPLETE")
	assert.Equal(t, uint32(0x99), hdr.VerificationTag)
	assert.NotZero(t, c.Flags&wire.FlagT)

	ack := wire.Init{Ack: true, InitiateTag: rawPeerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 100}
	ack.Params.StateCookie = []byte("cookie")
	ack.Params.Adaptation, ack.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(in.InitiateTag, ack.Append(nil))
	peer.recv(wire.ChunkCookieEcho)
	peer.send(in.InitiateTag, wire.ShutdownAck{}.Append(nil)) // COOKIE-ECHOED
	hdr, c, ok = peer.recvChunk(wire.ChunkShutdownComplete, 3*time.Second)
	require.True(t, ok, "COOKIE-ECHOED: SHUTDOWN COMPLETE")
	assert.Equal(t, in.InitiateTag, hdr.VerificationTag)
	assert.NotZero(t, c.Flags&wire.FlagT)

	peer.send(in.InitiateTag, wire.CookieAck{}.Append(nil))
	require.NoError(t, <-dialed, "the start completes")
}

// TestRFC9260_9_2_InitInShutdownAckSent: an INIT in SHUTDOWN-ACK-SENT
// (the peer lost our SHUTDOWN ACK and restarted) is discarded and the
// SHUTDOWN ACK sent again at once.
func TestRFC9260_9_2_InitInShutdownAckSent(t *testing.T) {
	peer := newRawPeer(t)
	_, tag, tsn := dialRaw(t, peer, &Config{Streams: 4, RTO: RTOConfig{Initial: 4 * time.Second, Min: 4 * time.Second}})
	peer.send(tag, (&wire.Shutdown{CumTSNAck: tsn - 1}).Append(nil))
	_, ok := peer.recvAll(wire.ChunkShutdownAck, 3*time.Second)
	require.True(t, ok)
	in := wire.Init{InitiateTag: 0x4242, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 5}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(0, in.Append(nil))
	seen, ok := peer.recvAll(wire.ChunkShutdownAck, 2*time.Second) // T2 is 4 s
	require.True(t, ok, "SHUTDOWN ACK again, before T2")
	assert.NotContains(t, seen, wire.ChunkInitAck)
}

// TestRFC9260_9_2_ShutdownAckSentMaxRetrans: in SHUTDOWN-ACK-SENT the
// SHUTDOWN ACK is retransmitted on T2 until Association.Max.Retrans (no
// T5 guard cuts it short: T5 is the SHUTDOWN sender's), then ABORT.
func TestRFC9260_9_2_ShutdownAckSentMaxRetrans(t *testing.T) {
	peer := newRawPeer(t)
	const rto = 30 * time.Millisecond
	_, tag, tsn := dialRaw(t, peer, &Config{Streams: 4, MaxRetrans: 10, HeartbeatInterval: -1,
		RTO: RTOConfig{Initial: rto, Min: rto, Max: rto}})
	peer.send(tag, (&wire.Shutdown{CumTSNAck: tsn - 1}).Append(nil))
	acks := 0
	for {
		seen, ok := peer.recvAll(wire.ChunkAbort, 10*time.Second)
		require.True(t, ok, "ABORT at the end")
		for _, s := range seen {
			if s == wire.ChunkShutdownAck {
				acks++
			}
		}
		break
	}
	assert.Equal(t, 11, acks, "the SHUTDOWN ACK and Association.Max.Retrans retransmissions")
}

// TestRFC9260_9_2_T5StartsAtShutdown: T5-shutdown-guard starts with the
// SHUTDOWN, not with Close: data outstanding longer than 5 RTO.Max after
// Close (but retransmitted within Association.Max.Retrans) still ends in
// a graceful shutdown.
func TestRFC9260_9_2_T5StartsAtShutdown(t *testing.T) {
	peer := newRawPeer(t)
	const rto = 60 * time.Millisecond // T5 = 300 ms
	a, tag, tsn := dialRaw(t, peer, &Config{Streams: 4, MaxRetrans: 20, HeartbeatInterval: -1,
		RTO: RTOConfig{Initial: rto, Min: rto, Max: rto}})
	require.NoError(t, a.WriteMsg(1, 16, []byte("last words")))
	peer.recv(wire.ChunkData)
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	time.Sleep(600 * time.Millisecond) // SHUTDOWN-PENDING, DATA retransmitted
	peer.send(tag, (&wire.SACK{CumTSNAck: tsn, ARwnd: 1 << 20}).Append(nil))
	_, ok := peer.recvAll(wire.ChunkShutdown, 3*time.Second)
	require.True(t, ok, "SHUTDOWN once the data is acknowledged")
	peer.send(tag, wire.ShutdownAck{}.Append(nil))
	_, ok = peer.recvAll(wire.ChunkShutdownComplete, 3*time.Second)
	require.True(t, ok)
	select {
	case err := <-closed:
		require.NoError(t, err, "graceful")
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestRFC9260_8_3_HeartbeatBackoff: an unanswered HEARTBEAT backs the RTO
// off (as Linux does on a heartbeat strike): the RTO grows while the
// idle peer is silent.
func TestRFC9260_8_3_HeartbeatBackoff(t *testing.T) {
	peer := newRawPeer(t)
	const rto = 50 * time.Millisecond
	a, _, _ := dialRaw(t, peer, &Config{Streams: 4, MaxRetrans: 50, HeartbeatInterval: 20 * time.Millisecond,
		RTO: RTOConfig{Initial: rto, Min: rto, Max: 2 * time.Second}})
	require.Eventually(t, func() bool { return a.Stats().RTO >= 4*rto }, 10*time.Second, 10*time.Millisecond,
		"the RTO doubles per unanswered HEARTBEAT")
}

// TestRFC9260_7_2_4_T3RestartedAfterFastRetransmit: the fast
// retransmission of the first outstanding chunk restarts T3-rtx (step
// 4), so the next retransmission of that chunk comes an RTO after the
// fast one, not when the timer started by the original send runs out.
func TestRFC9260_7_2_4_T3RestartedAfterFastRetransmit(t *testing.T) {
	peer := newRawPeer(t)
	const rto = time.Second
	a, tag, tsn := dialRaw(t, peer, &Config{Streams: 4, HeartbeatInterval: -1,
		RTO: RTOConfig{Initial: rto, Min: rto, Max: rto}})
	for i := range 5 {
		require.NoError(t, a.WriteMsg(1, 16, []byte{byte(i)}))
	}
	got := 0
	for got < 5 {
		seen, ok := peer.recvAll(wire.ChunkData, 3*time.Second)
		require.True(t, ok)
		for _, s := range seen {
			if s == wire.ChunkData {
				got++
			}
		}
	}
	time.Sleep(400 * time.Millisecond)
	for end := uint16(2); end <= 4; end++ { // three miss indications for tsn
		peer.send(tag, (&wire.SACK{CumTSNAck: tsn - 1, ARwnd: 1 << 20, Gaps: []wire.GapAckBlock{{Start: 2, End: end}}}).Append(nil))
	}
	_, c, ok := peer.recvChunk(wire.ChunkData, 2*time.Second)
	require.True(t, ok, "fast retransmission")
	d, err := wire.ParseData(c)
	require.NoError(t, err)
	require.Equal(t, tsn, d.TSN)
	fast := time.Now()
	_, c, ok = peer.recvChunk(wire.ChunkData, 3*time.Second)
	require.True(t, ok, "T3-rtx retransmission")
	d, err = wire.ParseData(c)
	require.NoError(t, err)
	require.Equal(t, tsn, d.TSN)
	assert.Greater(t, time.Since(fast), 800*time.Millisecond, "T3-rtx restarted at the fast retransmission")
}

// bulkRaw writes total octets in messages of size octets on a and has the
// raw peer acknowledge every packet (SACK per packet, in order), until all
// is acknowledged: cwnd grows in slow start. It returns the next TSN.
func bulkRaw(t *testing.T, a *Association, peer *rawPeer, tag, tsn uint32, total, size int) uint32 {
	t.Helper()
	require.NoError(t, peer.pc.SetReadBuffer(8<<20))
	werr := make(chan error, 1)
	go func() {
		msg := make([]byte, size)
		for n := 0; n < total; n += size {
			if err := a.WriteMsg(1, 16, msg); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	next := tsn
	for got := 0; got < total; {
		require.NoError(t, peer.pc.SetReadDeadline(time.Now().Add(10*time.Second)))
		n, _, err := peer.pc.ReadFromUDP(peer.buf)
		require.NoError(t, err)
		pkt, err := wire.ParsePacket(peer.buf[:n])
		require.NoError(t, err)
		it := pkt.Chunks()
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			if c.Type != wire.ChunkData {
				continue
			}
			d, err := wire.ParseData(c)
			require.NoError(t, err)
			if d.TSN == next {
				next++
				got += len(d.UserData)
			}
		}
		peer.send(tag, (&wire.SACK{CumTSNAck: next - 1, ARwnd: 1 << 22}).Append(nil))
	}
	require.NoError(t, <-werr)
	require.Eventually(t, func() bool { return a.Stats().Flight == 0 }, 5*time.Second, 5*time.Millisecond)
	return next
}

// TestRFC9260_6_1_D_MaxBurst: with a window of a hundred packets open
// and nothing in flight for longer than a round trip, one large message
// leaves as at most Max.Burst packets until a SACK comes back (it left as
// the whole window before).
func TestRFC9260_6_1_D_MaxBurst(t *testing.T) {
	peer := newRawPeer(t)
	a, tag, tsn := dialRaw(t, peer, &Config{Streams: 4, MTU: 1500, HeartbeatInterval: -1, NoOffload: true})
	bulkRaw(t, a, peer, tag, tsn, 1<<20, 1400)
	st := a.Stats()
	require.Greater(t, st.Cwnd, 100*1500, "the window grew")
	cwnd := st.Cwnd
	// The SACKs' credit lasts one round trip with nothing in flight
	// (burstBudget); well under an RTO (1 s) after the bulk.
	time.Sleep(2*st.SRTT + 20*time.Millisecond)
	require.NoError(t, a.WriteMsg(1, 16, make([]byte, 140_000)))
	packets := 0
	for {
		require.NoError(t, peer.pc.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
		if _, _, err := peer.pc.ReadFromUDP(peer.buf); err != nil {
			break
		}
		packets++
	}
	assert.LessOrEqual(t, packets, 4, "Max.Burst packets before a SACK (cwnd %d)", cwnd)
	assert.Positive(t, packets)
}

// TestRFC9260_7_2_1_IdleCwnd: after an idle period of several RTOs the
// window is halved per RTO and, past the floor, back at the initial
// window before data goes again.
func TestRFC9260_7_2_1_IdleCwnd(t *testing.T) {
	peer := newRawPeer(t)
	const rto = 100 * time.Millisecond
	a, tag, tsn := dialRaw(t, peer, &Config{Streams: 4, MTU: 1500, HeartbeatInterval: -1, NoOffload: true,
		RTO: RTOConfig{Initial: rto, Min: rto, Max: time.Second, AckDelay: -1}})
	bulkRaw(t, a, peer, tag, tsn, 1<<20, 1400)
	st := a.Stats()
	require.Greater(t, st.Cwnd, 20*1500, "the window grew")
	require.Less(t, st.RTO, 300*time.Millisecond)
	time.Sleep(10 * st.RTO)
	require.NoError(t, a.WriteMsg(1, 16, []byte("after the idle")))
	assert.LessOrEqual(t, a.Stats().Cwnd, initialCwnd(a.Stats().MaxPacket), "cwnd decayed while idle")
}

// TestRFC9260_6_3_1_DelayedSACKNotLoss: with RTO.Min below the peer's
// SACK delay (DDP associations use 200 ms, the delay of most stacks), a
// lone message after bulk traffic, whose SACK the peer holds for its
// delay (§6.2), is not retransmitted: the RTO covers the SACK delay.
func TestRFC9260_6_3_1_DelayedSACKNotLoss(t *testing.T) {
	peer := newRawPeer(t)
	const rto = 100 * time.Millisecond
	a, tag, tsn := dialRaw(t, peer, &Config{Streams: 4, MTU: 1500, HeartbeatInterval: -1, NoOffload: true,
		RTO: RTOConfig{Initial: rto, Min: rto, Max: 10 * time.Second}})
	next := bulkRaw(t, a, peer, tag, tsn, 256<<10, 1400)
	before := a.Stats()
	require.NoError(t, a.WriteMsg(1, 16, []byte("lone")))
	_, c, ok := peer.recvChunk(wire.ChunkData, 3*time.Second)
	require.True(t, ok)
	d, err := wire.ParseData(c)
	require.NoError(t, err)
	require.Equal(t, next, d.TSN)
	const peerDelay = 150 * time.Millisecond // a peer's delayed SACK
	_, _, again := peer.recvChunk(wire.ChunkData, peerDelay)
	assert.False(t, again, "retransmitted before the peer's delayed SACK (RTO %v)", before.RTO)
	peer.send(tag, (&wire.SACK{CumTSNAck: next, ARwnd: 1 << 22}).Append(nil))
	require.Eventually(t, func() bool { return a.Stats().Flight == 0 }, 5*time.Second, 5*time.Millisecond)
	st := a.Stats()
	assert.Equal(t, before.T3Expiries, st.T3Expiries)
	assert.Equal(t, before.Cwnd, st.Cwnd, "no window cut")
}

// outgoingReset is a RE-CONFIG chunk with one Outgoing SSN Reset Request
// (RFC 6525 §4.1).
func outgoingReset(seq, lastTSN uint32, streams ...uint16) []byte {
	v := binary.BigEndian.AppendUint16(nil, uint16(wire.ParamOutgoingSSNReset))
	v = binary.BigEndian.AppendUint16(v, uint16(16+2*len(streams)))
	v = binary.BigEndian.AppendUint32(v, seq)
	v = binary.BigEndian.AppendUint32(v, 0) // Response Sequence Number
	v = binary.BigEndian.AppendUint32(v, lastTSN)
	for _, s := range streams {
		v = binary.BigEndian.AppendUint16(v, s)
	}
	return wire.Chunk{Type: wire.ChunkReconfig, Value: wire.Pad(v)}.Append(nil)
}

// reconfigResult waits for a RE-CONFIG response and returns it.
func (p *rawPeer) reconfigResult() wire.ReconfigResponse {
	p.t.Helper()
	_, c, ok := p.recvChunk(wire.ChunkReconfig, 5*time.Second)
	require.True(p.t, ok, "RE-CONFIG response")
	var got []wire.ReconfigResponse
	require.NoError(p.t, wire.ParseReconfig(c, nil, func(r wire.ReconfigResponse) { got = append(got, r) }))
	require.Len(p.t, got, 1)
	return got[0]
}

// orderedData is an ordered DATA chunk.
func orderedData(tsn uint32, sid, ssn uint16, s string) []byte {
	return (&wire.Data{Beginning: true, Ending: true, TSN: tsn, StreamID: sid, SSN: ssn, PPID: 51, UserData: []byte(s)}).Append(nil)
}

// TestRFC6525_5_2_2_OrderedStreamReset: the peer resets its outgoing
// stream after ordered messages, as usrsctp does when a WebRTC data
// channel closes: the reset is performed, the stream's expected SSN is 0
// again, and the next message at SSN 0 is delivered (it aborted the
// association with a Protocol Violation before). A reset whose last TSN
// has not all arrived is "In progress" and performed, and reported, once
// it has; a retransmitted request gets the same answer, one out of
// sequence "Bad Sequence Number".
func TestRFC6525_5_2_2_OrderedStreamReset(t *testing.T) {
	peer := newRawPeer(t)
	got := make(chan string, 16)
	a, tag, _ := dialRawWith(t, peer, &Config{Streams: 4}, func(sid uint16, _ uint32, b []byte) { got <- string(b) })
	const seq = 100 // the peer's Initial TSN (§4.1)
	peer.send(tag, orderedData(100, 1, 0, "a"), orderedData(101, 1, 1, "b"))
	peer.send(tag, outgoingReset(seq, 101, 1))
	r := peer.reconfigResult()
	assert.Equal(t, wire.ReconfigResponse{SeqNum: seq, Result: wire.ReconfigSuccessPerformed}, r)
	peer.send(tag, orderedData(102, 1, 0, "c"))
	for _, want := range []string{"a", "b", "c"} {
		select {
		case m := <-got:
			require.Equal(t, want, m)
		case <-time.After(5 * time.Second):
			t.Fatalf("message %q not delivered (association %v, %v)", want, a.Stats().State, a.Err())
		}
	}

	// Deferred: TSN 103 and 104 are not in yet.
	peer.send(tag, outgoingReset(seq+1, 104, 1))
	assert.Equal(t, wire.ReconfigInProgress, peer.reconfigResult().Result)
	peer.send(tag, orderedData(104, 1, 2, "e"))
	peer.send(tag, orderedData(103, 1, 1, "d"))
	assert.Equal(t, wire.ReconfigResponse{SeqNum: seq + 1, Result: wire.ReconfigSuccessPerformed}, peer.reconfigResult())
	peer.send(tag, outgoingReset(seq+1, 104, 1)) // retransmitted
	assert.Equal(t, wire.ReconfigSuccessPerformed, peer.reconfigResult().Result)
	peer.send(tag, outgoingReset(seq+7, 104, 1))
	assert.Equal(t, wire.ReconfigErrorBadSeqNumber, peer.reconfigResult().Result)
	peer.send(tag, orderedData(105, 1, 0, "f"))
	for _, want := range []string{"d", "e", "f"} {
		select {
		case m := <-got:
			require.Equal(t, want, m)
		case <-time.After(5 * time.Second):
			t.Fatalf("message %q not delivered (association %v, %v)", want, a.Stats().State, a.Err())
		}
	}
	assert.Equal(t, stateEstablished, a.Stats().State)
}

// TestRFC9260_5_1_5_StaleCookieError: a COOKIE ECHO whose cookie verifies
// but has expired is answered with an ERROR with a Stale Cookie cause
// (step 3) carrying the staleness, with the peer's tag; no association.
// A Cookie Preservative in the next INIT lengthens the cookie's life.
func TestRFC9260_5_1_5_StaleCookieError(t *testing.T) {
	const life = 100 * time.Millisecond
	l, err := Listen("udp4", "127.0.0.1:0", &Config{Streams: 4, CookieLifespan: life})
	require.NoError(t, err)
	defer l.Close()
	peer := newRawPeer(t)
	peer.to = l.Addr().(*net.UDPAddr)
	const peerTag = 0x0C0FFEE
	in := wire.Init{InitiateTag: peerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(0, in.Append(nil))
	_, c := peer.recv(wire.ChunkInitAck)
	ack, err := wire.ParseInit(c)
	require.NoError(t, err)
	time.Sleep(life + 150*time.Millisecond)
	peer.send(ack.InitiateTag, (&wire.CookieEcho{Cookie: ack.Params.StateCookie}).Append(nil))
	hdr, c, ok := peer.recvChunk(wire.ChunkError, 3*time.Second)
	require.True(t, ok, "ERROR for a stale cookie")
	assert.Equal(t, uint32(peerTag), hdr.VerificationTag)
	e, err := wire.ParseError(c)
	require.NoError(t, err)
	it := e.CauseIter()
	cause, ok := it.Next()
	require.True(t, ok)
	require.Equal(t, wire.CauseStaleCookie, cause.Code)
	us, err := cause.Staleness()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, us, uint32(100_000), "staleness in µs")
	assert.Equal(t, uint64(1), l.HandshakeStats().StaleCookies)

	// §5.2.6: a new INIT asks for 1 s more; that cookie outlives life.
	in.Params.CookiePreservative = 1000
	peer.send(0, in.Append(nil))
	_, c = peer.recv(wire.ChunkInitAck)
	ack, err = wire.ParseInit(c)
	require.NoError(t, err)
	time.Sleep(life + 50*time.Millisecond)
	peer.send(ack.InitiateTag, (&wire.CookieEcho{Cookie: ack.Params.StateCookie}).Append(nil))
	_, _, ok = peer.recvChunk(wire.ChunkCookieAck, 3*time.Second)
	require.True(t, ok, "the preserved cookie is still valid")
}

// TestRFC9260_5_2_6_StaleCookieReaction: the dialer that gets a Stale
// Cookie ERROR in COOKIE-ECHOED starts again with an INIT with a Cookie
// Preservative and completes; one that gets nothing else fails after
// Max.Init.Retransmits of them.
func TestRFC9260_5_2_6_StaleCookieReaction(t *testing.T) {
	for _, always := range []bool{false, true} {
		peer := newRawPeer(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		dialed := make(chan error, 1)
		go func() {
			a, err := Dial(ctx, "udp4", peer.pc.LocalAddr().String(), &Config{Streams: 4, MaxInitRetrans: 2})
			if err == nil {
				_ = a.Abort()
			}
			dialed <- err
		}()
		inits := 0
		for {
			_, c, ok := peer.recvChunk(wire.ChunkInit, 5*time.Second)
			if !ok {
				break
			}
			inits++
			in, err := wire.ParseInit(c)
			require.NoError(t, err)
			if inits > 1 {
				assert.Equal(t, uint32(2*(250+1)), in.Params.CookiePreservative, "twice the staleness, in ms")
			}
			ack := wire.Init{Ack: true, InitiateTag: rawPeerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 100}
			ack.Params.StateCookie = []byte("cookie")
			ack.Params.Adaptation, ack.Params.HasAdaptation = wire.AdaptationDDP, true
			peer.send(in.InitiateTag, ack.Append(nil))
			peer.recv(wire.ChunkCookieEcho)
			if !always && inits == 2 {
				peer.send(in.InitiateTag, wire.CookieAck{}.Append(nil))
				break
			}
			peer.send(in.InitiateTag, (&wire.ErrorChunk{Causes: wire.AppendCauseStaleCookie(nil, 250_000)}).Append(nil))
			if always && inits == 3 {
				break
			}
		}
		err := <-dialed
		cancel()
		if always {
			require.ErrorIs(t, err, ErrHandshake)
			assert.Equal(t, 3, inits, "the INIT and Max.Init.Retransmits more")
		} else {
			require.NoError(t, err)
			assert.Equal(t, 2, inits)
		}
	}
}

// TestRFC9260_5_2_4_B_CollisionNewPeerTag: in COOKIE-ECHOED the peer's own
// INIT (with a new tag) crosses our COOKIE ECHO. Our INIT ACK carries a
// cookie whose Tie-Tags are our tag and the peer's tag of its INIT ACK
// (§5.2.1), and the COOKIE ECHO of that cookie, whose peer tag is new, is
// case B: the association takes the new tag, answers COOKIE ACK and is
// established (it was dropped before).
func TestRFC9260_5_2_4_B_CollisionNewPeerTag(t *testing.T) {
	peer := newRawPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialed := make(chan *Association, 1)
	go func() {
		a, err := Dial(ctx, "udp4", peer.pc.LocalAddr().String(), &Config{Streams: 4})
		assert.NoError(t, err)
		dialed <- a
	}()
	_, c := peer.recv(wire.ChunkInit)
	ourInit, err := wire.ParseInit(c)
	require.NoError(t, err)
	ack := wire.Init{Ack: true, InitiateTag: rawPeerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 100}
	ack.Params.StateCookie = []byte("cookie")
	ack.Params.Adaptation, ack.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(ourInit.InitiateTag, ack.Append(nil))
	peer.recv(wire.ChunkCookieEcho) // COOKIE-ECHOED

	const newTag = 0x6E6577
	in := wire.Init{InitiateTag: newTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 500}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(0, in.Append(nil))
	hdr, c := peer.recv(wire.ChunkInitAck)
	require.Equal(t, uint32(newTag), hdr.VerificationTag)
	iack, err := wire.ParseInit(c)
	require.NoError(t, err)
	require.Equal(t, ourInit.InitiateTag, iack.InitiateTag)
	ck, err := handshake.DecodeCookie(iack.Params.StateCookie)
	require.NoError(t, err)
	assert.Equal(t, ourInit.InitiateTag, ck.LocalTieTag, "§5.2.1 Local-Tie-Tag")
	assert.Equal(t, uint32(rawPeerTag), ck.PeerTieTag, "§5.2.1 Peer's-Tie-Tag")

	peer.send(ourInit.InitiateTag, (&wire.CookieEcho{Cookie: iack.Params.StateCookie}).Append(nil))
	hdr, _, ok := peer.recvChunk(wire.ChunkCookieAck, 3*time.Second)
	require.True(t, ok, "case B answered")
	assert.Equal(t, uint32(newTag), hdr.VerificationTag, "with the new peer tag")
	a := <-dialed
	require.NotNil(t, a)
	defer a.Abort()
	a.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, a.WriteMsg(1, 16, []byte("x")))
	hdr, c, ok = peer.recvChunk(wire.ChunkData, 3*time.Second)
	require.True(t, ok)
	assert.Equal(t, uint32(newTag), hdr.VerificationTag)
	peer.send(newTag, (&wire.SACK{CumTSNAck: ourInit.InitialTSN, ARwnd: 1 << 20}).Append(nil))
	peer.send(ourInit.InitiateTag, orderedData(500, 1, 0, "from the new INIT's TSN"))
	_, c, ok = peer.recvChunk(wire.ChunkSACK, 3*time.Second)
	require.True(t, ok)
	s, err := wire.ParseSACK(c, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, uint32(500), s.CumTSNAck, "the peer's TSN from the cookie")
}

// listenRaw returns a listener and a raw peer pointed at it.
func listenRaw(t *testing.T) (*Listener, *rawPeer) {
	l, err := Listen("udp4", "127.0.0.1:0", &Config{Streams: 4})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	peer := newRawPeer(t)
	peer.to = l.Addr().(*net.UDPAddr)
	return l, peer
}

// abortCauses waits for an ABORT and returns its header and causes.
func (p *rawPeer) abortCauses() (wire.Header, []wire.Cause) {
	p.t.Helper()
	hdr, c, ok := p.recvChunk(wire.ChunkAbort, 5*time.Second)
	require.True(p.t, ok, "ABORT")
	ab, err := wire.ParseAbort(c)
	require.NoError(p.t, err)
	var cs []wire.Cause
	it := ab.CauseIter()
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		cs = append(cs, c)
	}
	return hdr, cs
}

// TestRFC9260_3_3_2_1_HostNameAddress: a Host Name Address in an INIT (at
// the listener) or an INIT ACK (at the dialer) is answered with an ABORT
// carrying an Unresolvable Address cause that holds the parameter.
func TestRFC9260_3_3_2_1_HostNameAddress(t *testing.T) {
	host := []byte("peer.example\x00")
	wantCause := wire.AppendCauseUnresolvableAddress(nil, wire.Param{Type: wire.ParamHostNameAddress, Value: host})

	_, peer := listenRaw(t)
	in := wire.Init{InitiateTag: 0x11, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	in.Params.HostName = host
	peer.send(0, in.Append(nil))
	hdr, cs := peer.abortCauses()
	assert.Equal(t, uint32(0x11), hdr.VerificationTag)
	require.Len(t, cs, 1)
	assert.Equal(t, wire.CauseUnresolvableAddress, cs[0].Code)
	assert.Equal(t, wantCause[4:], cs[0].Info)

	dialer := newRawPeer(t)
	dialed := make(chan error, 1)
	go func() {
		_, err := Dial(context.Background(), "udp4", dialer.pc.LocalAddr().String(), &Config{Streams: 4})
		dialed <- err
	}()
	_, c := dialer.recv(wire.ChunkInit)
	ours, err := wire.ParseInit(c)
	require.NoError(t, err)
	ack := wire.Init{Ack: true, InitiateTag: rawPeerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 100}
	ack.Params.StateCookie = []byte("cookie")
	ack.Params.Adaptation, ack.Params.HasAdaptation = wire.AdaptationDDP, true
	ack.Params.HostName = host
	dialer.send(ours.InitiateTag, ack.Append(nil))
	hdr, cs = dialer.abortCauses()
	assert.Equal(t, uint32(rawPeerTag), hdr.VerificationTag)
	require.Len(t, cs, 1)
	assert.Equal(t, wire.CauseUnresolvableAddress, cs[0].Code)
	assert.ErrorIs(t, <-dialed, ErrHandshake)
}

// TestRFC9260_3_2_1_UnrecognizedParameters: the dialer reports an INIT
// ACK parameter it does not know whose type asks for a report, in an
// ERROR bundled after the COOKIE ECHO; the listener's INIT ACK reports an
// INIT's Forward-TSN-Supported (no PR-SCTP here, RFC 3758 §3.3.1).
func TestRFC9260_3_2_1_UnrecognizedParameters(t *testing.T) {
	dialer := newRawPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		a, err := Dial(ctx, "udp4", dialer.pc.LocalAddr().String(), &Config{Streams: 4})
		if err == nil {
			_ = a.Abort()
		}
	}()
	_, c := dialer.recv(wire.ChunkInit)
	ours, err := wire.ParseInit(c)
	require.NoError(t, err)
	ack := wire.Init{Ack: true, InitiateTag: rawPeerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 100}
	ack.Params.StateCookie = []byte("cookie")
	ack.Params.Adaptation, ack.Params.HasAdaptation = wire.AdaptationDDP, true
	b := ack.Append(nil)
	unknown := wire.AppendParam(nil, 0xC123, []byte{1, 2, 3, 4}) // skip and report
	b = append(b, unknown...)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	dialer.send(ours.InitiateTag, b)
	seen, ok := dialer.recvAll(wire.ChunkError, 3*time.Second)
	require.True(t, ok, "ERROR reporting the parameter")
	require.GreaterOrEqual(t, len(seen), 2)
	assert.Equal(t, []wire.ChunkType{wire.ChunkCookieEcho, wire.ChunkError}, seen[len(seen)-2:], "bundled after the COOKIE ECHO")

	_, peer := listenRaw(t)
	in := wire.Init{InitiateTag: 0x12, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	in.Params.ForwardTSN = true
	peer.send(0, in.Append(nil))
	_, c = peer.recv(wire.ChunkInitAck)
	iack, err := wire.ParseInit(c)
	require.NoError(t, err)
	assert.Equal(t, 1, iack.Params.PeerUnrecognized, "Forward-TSN-Supported reported")
	assert.False(t, iack.Params.ForwardTSN)
}

// TestRFC9260_3_3_10_AdaptationRefusalCause: the listener's refusal of an
// INIT without the DDP Adaptation Layer Indication (RFC 5043 §5.1) is an
// ABORT that says why, with a User-Initiated Abort cause.
func TestRFC9260_3_3_10_AdaptationRefusalCause(t *testing.T) {
	_, peer := listenRaw(t)
	in := wire.Init{InitiateTag: 0x13, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1}
	peer.send(0, in.Append(nil))
	hdr, cs := peer.abortCauses()
	assert.Equal(t, uint32(0x13), hdr.VerificationTag)
	require.Len(t, cs, 1)
	assert.Equal(t, wire.CauseUserInitiatedAbort, cs[0].Code)
	assert.Contains(t, string(cs[0].Info), "RFC 5043 §5.1")
}

// incomingReset is a RE-CONFIG chunk with one Incoming SSN Reset Request
// (RFC 6525 §4.2).
func incomingReset(seq uint32, streams ...uint16) []byte {
	v := binary.BigEndian.AppendUint16(nil, uint16(wire.ParamIncomingSSNReset))
	v = binary.BigEndian.AppendUint16(v, uint16(8+2*len(streams)))
	v = binary.BigEndian.AppendUint32(v, seq)
	for _, s := range streams {
		v = binary.BigEndian.AppendUint16(v, s)
	}
	return wire.Chunk{Type: wire.ChunkReconfig, Value: wire.Pad(v)}.Append(nil)
}

// TestRFC6525_5_2_3_IncomingResetAnswered: an Incoming SSN Reset Request
// is answered, as Linux and usrsctp expect, with our own Outgoing SSN
// Reset Request for those streams, whose Response Sequence Number is the
// request's and whose Sender's Last Assigned TSN is our last TSN (it was
// answered "Nothing to do", which usrsctp reports as a failed reset). A
// retransmission gets our request again until the peer's response, then
// Performed; streams we do not have are Denied.
func TestRFC6525_5_2_3_IncomingResetAnswered(t *testing.T) {
	peer := newRawPeer(t)
	a, tag, tsn := dialRaw(t, peer, &Config{Streams: 4})
	require.NoError(t, a.WriteMsg(3, 16, []byte("one")))
	peer.recv(wire.ChunkData)
	const seq = 100
	outReq := func() (seq, respSeq, last uint32, streams []byte) {
		t.Helper()
		_, c, ok := peer.recvChunk(wire.ChunkReconfig, 5*time.Second)
		require.True(t, ok, "RE-CONFIG")
		var reqs []wire.ReconfigRequest
		require.NoError(t, wire.ParseReconfig(c, func(r wire.ReconfigRequest) { reqs = append(reqs, r) }, nil))
		require.Len(t, reqs, 1)
		require.Equal(t, wire.ParamOutgoingSSNReset, reqs[0].Type)
		last, streams, err := reqs[0].OutgoingSSNReset()
		require.NoError(t, err)
		return reqs[0].SeqNum, binary.BigEndian.Uint32(reqs[0].Rest), last, append([]byte(nil), streams...)
	}
	peer.send(tag, incomingReset(seq, 3))
	ourSeq, respSeq, last, streams := outReq()
	assert.Equal(t, tsn, ourSeq, "our request numbers start at our Initial TSN")
	assert.Equal(t, uint32(seq), respSeq)
	assert.Equal(t, tsn, last, "Sender's Last Assigned TSN: the one DATA sent")
	assert.Equal(t, []byte{0, 3}, streams)

	peer.send(tag, incomingReset(seq, 3)) // retransmitted: our request again
	again, _, _, _ := outReq()
	assert.Equal(t, ourSeq, again)
	peer.send(tag, wire.AppendReconfigResponses(nil, wire.ReconfigResponse{SeqNum: ourSeq, Result: wire.ReconfigSuccessPerformed}))
	peer.send(tag, incomingReset(seq, 3)) // retransmitted after our request's answer
	assert.Equal(t, wire.ReconfigResponse{SeqNum: seq, Result: wire.ReconfigSuccessPerformed}, peer.reconfigResult())
	peer.send(tag, incomingReset(seq+1, 9))
	assert.Equal(t, wire.ReconfigResponse{SeqNum: seq + 1, Result: wire.ReconfigDenied}, peer.reconfigResult())
	require.NoError(t, a.WriteMsg(3, 16, []byte("two")))
	_, _, ok := peer.recvChunk(wire.ChunkData, 3*time.Second)
	assert.True(t, ok, "the stream carries on")
}

// TestRFC9260_5_1_ChunksBeforeEstablished: in COOKIE-WAIT (the INIT sent,
// no TCB yet) chunks that need one — DATA, SACK, SHUTDOWN, RE-CONFIG,
// HEARTBEAT — carrying our tag (anyone who saw the INIT knows it) are
// discarded without harm, and the start completes.
func TestRFC9260_5_1_ChunksBeforeEstablished(t *testing.T) {
	peer := newRawPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialed := make(chan error, 1)
	go func() {
		a, err := Dial(ctx, "udp4", peer.pc.LocalAddr().String(), &Config{Streams: 4})
		if err == nil {
			_ = a.Abort()
		}
		dialed <- err
	}()
	_, c := peer.recv(wire.ChunkInit)
	in, err := wire.ParseInit(c)
	require.NoError(t, err)
	for _, ch := range [][]byte{
		orderedData(1, 1, 0, "early"),
		(&wire.SACK{CumTSNAck: in.InitialTSN, ARwnd: 1 << 20}).Append(nil),
		(&wire.Shutdown{CumTSNAck: 1}).Append(nil),
		outgoingReset(1, 1),
		incomingReset(1, 1),
		(&wire.Heartbeat{Info: []byte("hb")}).Append(nil),
		wire.CookieAck{}.Append(nil),
	} {
		peer.send(in.InitiateTag, ch)
	}
	ack := wire.Init{Ack: true, InitiateTag: rawPeerTag, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 100}
	ack.Params.StateCookie = []byte("cookie")
	ack.Params.Adaptation, ack.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(in.InitiateTag, ack.Append(nil))
	peer.recv(wire.ChunkCookieEcho)
	peer.send(in.InitiateTag, wire.CookieAck{}.Append(nil))
	require.NoError(t, <-dialed)
}

// TestRFC9260_5_2_4_A_RestartWhileShuttingDown: a restarted peer's COOKIE
// ECHO (case A) reaching an association in SHUTDOWN-ACK-SENT makes no new
// association: the SHUTDOWN ACK is sent again with an ERROR carrying a
// Cookie Received While Shutting Down cause.
func TestRFC9260_5_2_4_A_RestartWhileShuttingDown(t *testing.T) {
	l, peer := listenRaw(t)
	const peerTag = 0x21212121
	a, tag, _ := rawAssociate(t, peer, l, peerTag)
	defer a.Abort()
	a.Start(func(uint16, uint32, []byte) {}, func(error) {})
	a.mu.Lock()
	ourTSN := a.tcb.localInitialTSN
	a.mu.Unlock()
	// The restarted peer's INIT, answered while established (§5.2.2).
	restart := wire.Init{InitiateTag: 0x31313131, ARwnd: 1 << 20, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 9}
	restart.Params.Adaptation, restart.Params.HasAdaptation = wire.AdaptationDDP, true
	peer.send(0, restart.Append(nil))
	_, c := peer.recv(wire.ChunkInitAck)
	ack, err := wire.ParseInit(c)
	require.NoError(t, err)
	// The old association's peer shuts down: SHUTDOWN-ACK-SENT.
	peer.send(tag, (&wire.Shutdown{CumTSNAck: ourTSN - 1}).Append(nil))
	peer.recv(wire.ChunkShutdownAck)
	require.Eventually(t, func() bool { return a.Stats().State == stateShutdownAckSent }, 5*time.Second, time.Millisecond)

	peer.send(ack.InitiateTag, (&wire.CookieEcho{Cookie: ack.Params.StateCookie}).Append(nil))
	seen, ok := peer.recvAll(wire.ChunkError, 3*time.Second)
	require.True(t, ok, "ERROR Cookie Received While Shutting Down")
	assert.Contains(t, seen, wire.ChunkShutdownAck)
	assert.Equal(t, stateShutdownAckSent, a.Stats().State, "the old association shuts down as it was")
}
