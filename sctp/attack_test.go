package sctp

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// spoofableConn is an unconnected UDP socket used as one association's
// conn to one peer, so that a test can also write packets from the
// association's own address and port (an off-path attacker who guessed
// them).
type spoofableConn struct {
	*net.UDPConn
	raddr *net.UDPAddr
}

func (c *spoofableConn) Read(b []byte) (int, error) {
	for {
		n, from, err := c.ReadFromUDP(b)
		if err != nil || from.AddrPort() == c.raddr.AddrPort() {
			return n, err
		}
	}
}
func (c *spoofableConn) Write(b []byte) (int, error) { return c.WriteToUDP(b, c.raddr) }
func (c *spoofableConn) RemoteAddr() net.Addr        { return c.raddr }

// dialFrom dials l from a socket bound to ip and returns the association
// and the socket it uses.
func dialFrom(ctx context.Context, t *testing.T, l *Listener, ip string) (*Association, *spoofableConn, error) {
	t.Helper()
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	require.NoError(t, err)
	c := &spoofableConn{UDPConn: uc, raddr: l.Addr().(*net.UDPAddr)}
	a, err := DialConn(ctx, c, &Config{MaxInitRetrans: 2, RTO: RTOConfig{Initial: 100 * time.Millisecond}})
	if err != nil {
		_ = uc.Close()
		return nil, nil, err
	}
	t.Cleanup(func() { _ = a.Abort(); _ = uc.Close() })
	return a, c, nil
}

// acceptAll accepts every association of l until ctx ends, starts it with
// rec and aborts it at the end of the test.
func acceptAll(ctx context.Context, t *testing.T, l *Listener, rec *rxRec) <-chan *Association {
	out := make(chan *Association, 64)
	go func() {
		for {
			a, err := l.Accept(ctx)
			if err != nil {
				return
			}
			if rec != nil {
				a.Start(rec.fn, func(error) {})
			}
			out <- a
		}
	}()
	t.Cleanup(func() {
		for {
			select {
			case a := <-out:
				_ = a.Abort()
			default:
				return
			}
		}
	})
	return out
}

// TestListener_SpoofedPacketsIgnored_RFC9260_8_5: packets from a live
// client's own address and port but without the association's
// Verification Tag — an ABORT, an ABORT with the T bit, a SHUTDOWN, a
// DATA — are dropped and counted in the association's Stats().ForeignTag
// (§8.5, §8.5.1: an ABORT is accepted only with the receiver's tag, or the
// peer's with the T bit); the association
// carries on and delivers the client's next message.
func TestListener_SpoofedPacketsIgnored_RFC9260_8_5(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := newRec()
	accepted := acceptAll(ctx, t, l, rec)
	cli, conn, err := dialFrom(ctx, t, l, "127.0.0.1")
	require.NoError(t, err)
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	srv := <-accepted

	spoofs := [][]byte{
		(&wire.Abort{}).Append(nil),
		(&wire.Abort{T: true}).Append(nil),
		(&wire.Shutdown{CumTSNAck: 1}).Append(nil),
		(&wire.Data{TSN: 1, Beginning: true, Ending: true, Unordered: true, PPID: 16, UserData: []byte("forged")}).Append(nil),
	}
	for _, c := range spoofs {
		p := wire.AppendHeader(nil, wire.Header{SrcPort: defaultPort, DstPort: defaultPort, VerificationTag: 0xdeadbeef})
		p = append(p, c...)
		wire.SetChecksum(p)
		_, err := conn.WriteToUDP(p, conn.raddr)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return srv.Stats().ForeignTag == uint64(len(spoofs)) },
		5*time.Second, 5*time.Millisecond, "every spoofed packet counted")

	require.NoError(t, cli.WriteMsg(1, 16, []byte("still here")))
	got := rec.wait(t, 1)
	assert.Equal(t, rxCopy{1, 16, []byte("still here")}, got[0], "nothing forged delivered")
	assert.Equal(t, stateEstablished, srv.Stats().State)
	assert.Equal(t, stateEstablished, cli.Stats().State)
}

// TestListener_AssociationCaps: a peer address holds at most
// MaxAssociationsPerAddress associations and the listener at most
// MaxAssociations; a valid COOKIE ECHO beyond either gets an ABORT and
// nothing is kept (counted RefusedFull); another address is still served
// until the global cap, and a slot freed by an association's end is
// usable again.
func TestListener_AssociationCaps(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", &Config{MaxAssociationsPerAddress: 2, MaxAssociations: 3})
	require.NoError(t, err)
	defer l.Close()
	l.mu.Lock()
	l.evictAfter = time.Hour // no eviction: the caps alone
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	accepted := acceptAll(ctx, t, l, nil)

	first, _, err := dialFrom(ctx, t, l, "127.0.0.1")
	require.NoError(t, err)
	_, _, err = dialFrom(ctx, t, l, "127.0.0.1")
	require.NoError(t, err)
	_, _, err = dialFrom(ctx, t, l, "127.0.0.1")
	require.ErrorIs(t, err, ErrAborted, "a third association from one address")
	assert.Equal(t, uint64(1), l.HandshakeStats().RefusedFull)

	_, _, err = dialFrom(ctx, t, l, "127.0.0.3")
	require.NoError(t, err, "another address")
	_, _, err = dialFrom(ctx, t, l, "127.0.0.4")
	require.ErrorIs(t, err, ErrAborted, "beyond MaxAssociations")
	assert.Equal(t, uint64(2), l.HandshakeStats().RefusedFull)
	l.mu.Lock()
	assert.Len(t, l.assocs, 3, "nothing kept for the refused ones")
	l.mu.Unlock()

	// The first one ends: its slot is free again.
	require.NoError(t, first.Abort())
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.assocs) == 2
	}, 5*time.Second, 5*time.Millisecond)
	_, _, err = dialFrom(ctx, t, l, "127.0.0.4")
	require.NoError(t, err, "a freed slot")
	assert.Eventually(t, func() bool { return len(accepted) == 4 }, 5*time.Second, 5*time.Millisecond, "four accepted")
}

// TestListener_INITFloodKeepsNothing_RFC9260_5_1_3: 20,000 INITs from as
// many source addresses and ports (127.2.0.0/16) cost the listener no
// goroutine and no table entry, and at most 8 MiB of heap during the
// flood and 4 MiB after it; every INIT is answered or rate-limited, and a
// legitimate association established during the flood carries data.
func TestListener_INITFloodKeepsNothing_RFC9260_5_1_3(t *testing.T) {
	const n = 20000
	l, err := Listen("udp4", "127.0.0.1:0", &Config{InitAckRate: 1 << 20})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := newRec()
	accepted := acceptAll(ctx, t, l, rec)
	to := l.Addr().(*net.UDPAddr)

	runtime.GC()
	runtime.GC()
	var before, m runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	var peak uint64
	in := wire.Init{ARwnd: 1 << 16, OutboundStreams: 16, InboundStreams: 16, InitialTSN: 1}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	pkt := make([]byte, 0, 256)
	legit := make(chan error, 1)
	for i := range n {
		if i == n/4 {
			go func() {
				a, _, err := dialFrom(ctx, t, l, "127.0.0.1")
				if err == nil {
					err = a.WriteMsg(2, 16, []byte("during the flood"))
				}
				legit <- err
			}()
		}
		uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 2, byte(i/250), byte(i%250+1))})
		require.NoError(t, err)
		in.InitiateTag = uint32(i + 1)
		pkt = wire.AppendHeader(pkt[:0], wire.Header{SrcPort: 6000, DstPort: defaultPort})
		pkt = in.Append(pkt)
		wire.SetChecksum(pkt)
		_, err = uc.WriteToUDP(pkt, to)
		require.NoError(t, err)
		require.NoError(t, uc.Close())
		if i%1000 == 0 {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	}
	require.NoError(t, <-legit, "a legitimate association during the flood")
	got := rec.wait(t, 1)
	assert.Equal(t, []byte("during the flood"), got[0].b)
	st := l.HandshakeStats()
	require.Eventually(t, func() bool {
		st = l.HandshakeStats()
		return st.InitAcks+st.RateLimited >= n
	}, 10*time.Second, 10*time.Millisecond, "every INIT seen: %+v", st)
	runtime.GC()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	peakGrowth := int64(peak) - int64(before.HeapInuse)
	t.Logf("%d INITs: %+v; heap in use %+d KiB after, peak %+d KiB; goroutines %d -> %d",
		n, st, growth>>10, peakGrowth>>10, goroutines, runtime.NumGoroutine())
	assert.Less(t, peakGrowth, int64(8<<20), "heap during the flood")
	assert.Less(t, growth, int64(4<<20), "heap after the flood")
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines+8, "no goroutine per INIT")
	assert.Equal(t, uint64(1), st.CookiesOK, "only the legitimate association")
	l.mu.Lock()
	assert.Len(t, l.assocs, 1, "no table entry per INIT")
	l.mu.Unlock()
	// The accept goroutine hands the association on after starting it:
	// wait for it rather than read the channel at an instant.
	require.Eventually(t, func() bool { return len(accepted) == 1 }, 5*time.Second, 5*time.Millisecond,
		"only the legitimate association accepted")
}

// TestStreamIDFlood_RFC9260_6_5: a peer writes one DATA chunk on every
// stream id. The ids beyond the inbound streams negotiated (4 here) are
// acknowledged, answered with an ERROR carrying an Invalid Stream
// Identifier cause (§6.5, §3.3.10.1) and delivered to nobody; the ones
// within are delivered; nothing starts a goroutine or keeps the chunk,
// and the association carries on.
func TestStreamIDFlood_RFC9260_6_5(t *testing.T) {
	peer := newRawPeer(t)
	a, tag := establishRaw(t, peer, &Config{Streams: 4})
	rec := newRec()
	a.Start(rec.fn, func(err error) { rec.done <- err })
	goroutines := runtime.NumGoroutine()

	// 256 DATA chunks at a time, sent until the SACK acknowledges them
	// all (a loopback socket may drop some of a burst).
	const ids, perPacket = 1 << 16, 256
	tsn := uint32(100)
	invalid := map[uint16]bool{}
	buf := make([]byte, 1<<16)
	for first := 0; first < ids; first += perPacket {
		// Two packets: the receiver acknowledges every second packet at
		// once (§6.2), not after its delayed-ack timer.
		var chunks [2][]byte
		for sid := first; sid < first+perPacket; sid++ {
			d := wire.Data{TSN: tsn, StreamID: uint16(sid), PPID: 16, Unordered: true, Beginning: true, Ending: true, UserData: []byte("x")}
			half := (sid - first) * 2 / perPacket
			chunks[half] = d.Append(chunks[half])
			tsn++
		}
		for acked := false; !acked; {
			peer.send(tag, chunks[0])
			peer.send(tag, chunks[1])
			require.NoError(t, peer.pc.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
			for !acked {
				n, _, err := peer.pc.ReadFromUDP(buf)
				if err != nil {
					break // resend
				}
				pkt, err := wire.ParsePacket(buf[:n])
				require.NoError(t, err)
				it := pkt.Chunks()
				for c, ok := it.Next(); ok; c, ok = it.Next() {
					switch c.Type {
					case wire.ChunkSACK:
						sk, err := wire.ParseSACK(c, nil, nil)
						require.NoError(t, err)
						acked = sk.CumTSNAck == tsn-1
					case wire.ChunkError:
						ec, err := wire.ParseError(c)
						require.NoError(t, err)
						causes := ec.Causes
						for len(causes) > 0 {
							cause, n, err := wire.ParseCause(causes)
							require.NoError(t, err)
							require.Equal(t, wire.CauseInvalidStream, cause.Code)
							invalid[binary.BigEndian.Uint16(cause.Info)] = true
							causes = causes[n:]
						}
					}
				}
			}
		}
	}
	got := rec.wait(t, 4)
	for i, m := range got {
		assert.Equal(t, uint16(i), m.sid, "only the negotiated streams delivered")
	}
	assert.Positive(t, len(invalid), "ERRORs with Invalid Stream Identifier causes")
	for sid := range invalid {
		assert.GreaterOrEqual(t, sid, uint16(4), "an ERROR names only streams beyond the negotiated ones")
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines+2, "no goroutine per stream id")
	a.mu.Lock()
	held := a.rs.held
	a.mu.Unlock()
	assert.Zero(t, held, "nothing held for the refused ids")
	assert.Equal(t, uint64(ids-4), a.Stats().InvalidStream)

	// Still alive: a message on a negotiated stream arrives.
	d := wire.Data{TSN: tsn, StreamID: 3, PPID: 16, Unordered: true, Beginning: true, Ending: true, UserData: []byte("after")}
	peer.send(tag, d.Append(nil))
	got = rec.wait(t, 5)
	assert.Equal(t, rxCopy{3, 16, []byte("after")}, got[4])
	assert.Equal(t, stateEstablished, a.Stats().State)
}
