package sctpllp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// rawInit is an INIT from SCTP port 6000 to 5000 with the DDP indication
// (unless noALI), its CRC32c set.
func rawInit(tag uint32, noALI bool) []byte {
	b := wire.AppendHeader(nil, wire.Header{SrcPort: 6000, DstPort: 5000})
	in := wire.Init{InitiateTag: tag, ARwnd: 65536, OutboundStreams: 10, InboundStreams: 10, InitialTSN: 77}
	if !noALI {
		in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	}
	b = in.Append(b)
	wire.SetChecksum(b)
	return b
}

// exchange sends b from c and returns the answer, or nil after wait.
func exchange(t *testing.T, c *net.UDPConn, to net.Addr, b []byte, wait time.Duration) []byte {
	t.Helper()
	_, err := c.WriteTo(b, to)
	require.NoError(t, err)
	buf := make([]byte, 2048)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	n, _, err := c.ReadFrom(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

func rawSocket(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestPionListener_StatelessInit_RFC9260_5_1_3: an INIT gets an INIT ACK
// with a State Cookie and the DDP indication, and the listener keeps
// nothing for it; a bad CRC, a bundled or tagged INIT get nothing; an INIT
// without the DDP indication an ABORT (RFC 5043 §5.1); a forged or
// tampered COOKIE ECHO nothing; an out-of-the-blue DATA an ABORT with the
// T bit (§8.4 rule 8).
func TestPionListener_StatelessInit_RFC9260_5_1_3(t *testing.T) {
	l, err := pion.Stack(pion.Config{}).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	ln := l.(pionListener)
	c := rawSocket(t, "127.0.0.1:0")
	to := ln.Addr()

	ans := exchange(t, c, to, rawInit(0x1234, false), 2*time.Second)
	require.NotNil(t, ans, "INIT ACK")
	pkt, err := wire.ParsePacket(ans)
	require.NoError(t, err)
	assert.Equal(t, wire.Header{SrcPort: 5000, DstPort: 6000, VerificationTag: 0x1234}, pkt.Header)
	it := pkt.Chunks()
	ch, ok := it.Next()
	require.True(t, ok)
	ack, err := wire.ParseInit(ch)
	require.NoError(t, err)
	assert.True(t, ack.Ack)
	assert.Len(t, ack.Params.StateCookie, 76+32)
	assert.True(t, ack.Params.HasAdaptation)
	assert.Equal(t, wire.AdaptationDDP, ack.Params.Adaptation)
	assert.True(t, ack.Params.HasExtension(wire.ChunkReconfig), "RE-CONFIG for stream reset (RFC 6525)")
	assert.Zero(t, ln.Peers(), "no state for an INIT")

	bad := rawInit(1, false)
	bad[len(bad)-1] ^= 1 // CRC32c no longer matches
	assert.Nil(t, exchange(t, c, to, bad, 200*time.Millisecond))
	tagged := rawInit(1, false)
	tagged[4] = 1 // INIT with a nonzero Verification Tag
	wire.SetChecksum(tagged)
	assert.Nil(t, exchange(t, c, to, tagged, 200*time.Millisecond))
	abort := exchange(t, c, to, rawInit(0x55, true), 2*time.Second)
	require.NotNil(t, abort, "ABORT for a non-DDP INIT")
	assert.Equal(t, byte(wire.ChunkAbort), abort[wire.HeaderLen])

	// A COOKIE ECHO with the cookie's last octet changed: MAC fails.
	forged := append([]byte(nil), ack.Params.StateCookie...)
	forged[len(forged)-1] ^= 1
	ce := wire.AppendHeader(nil, wire.Header{SrcPort: 6000, DstPort: 5000, VerificationTag: ack.InitiateTag})
	ce = (&wire.CookieEcho{Cookie: forged}).Append(ce)
	wire.SetChecksum(ce)
	assert.Nil(t, exchange(t, c, to, ce, 200*time.Millisecond))
	// The genuine cookie from another address: bound to the INIT's.
	other := rawSocket(t, "127.0.0.2:0")
	ce = wire.AppendHeader(nil, wire.Header{SrcPort: 6000, DstPort: 5000, VerificationTag: ack.InitiateTag})
	ce = (&wire.CookieEcho{Cookie: ack.Params.StateCookie}).Append(ce)
	wire.SetChecksum(ce)
	assert.Nil(t, exchange(t, other, to, ce, 200*time.Millisecond))

	data := wire.AppendHeader(nil, wire.Header{SrcPort: 6000, DstPort: 5000, VerificationTag: 9})
	data = (&wire.Data{TSN: 1, Beginning: true, Ending: true, PPID: 16, UserData: []byte("x")}).Append(data)
	wire.SetChecksum(data)
	oob := exchange(t, c, to, data, 2*time.Second)
	require.NotNil(t, oob)
	assert.Equal(t, byte(wire.ChunkAbort), oob[wire.HeaderLen])
	assert.Equal(t, wire.FlagT, oob[wire.HeaderLen+1]&wire.FlagT, "T bit: the peer's own tag reflected")

	// The genuine cookie from the INIT's address: an association.
	ack2 := exchange(t, c, to, ce, 2*time.Second)
	require.NotNil(t, ack2, "COOKIE ACK")
	assert.Equal(t, byte(wire.ChunkCookieAck), ack2[wire.HeaderLen])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pt, err := ln.Accept(ctx)
	require.NoError(t, err)
	ind, ok := pt.PeerAdaptation()
	assert.True(t, ok)
	assert.Equal(t, backend.AdaptationIndicationDDP, ind)
	_ = pt.Abort()

	st := ln.HandshakeStats()
	assert.Equal(t, uint64(1), st.InitAcks)
	assert.Equal(t, uint64(1), st.BadPackets)
	assert.Equal(t, uint64(1), st.BadInits)
	assert.Equal(t, uint64(1), st.RefusedALI)
	assert.Equal(t, uint64(2), st.CookiesBad)
	assert.Equal(t, uint64(1), st.CookiesOK)
	assert.Equal(t, uint64(1), st.OutOfTheBlue)
}

// TestPionListener_INITFlood_Bounded: 20,000 INITs from 20,000 distinct
// source addresses and ports (127.1.0.0/16, loopback) cost the listener no
// conn, no goroutine and at most 8 MiB of heap, every one answered or
// rate-limited, while a legitimate client opens a session and exchanges
// data during the flood. The code before (pion.Config.LegacyHandshake)
// made a conn, a pion association and six goroutines per INIT: about
// 47 KB each, held for the handshake timeout.
func TestPionListener_INITFlood_Bounded(t *testing.T) {
	const n = 20000
	ln, err := Listen("127.0.0.1:0", Config{Stack: pion.Stack(pion.Config{InitAckRate: 1000000})})
	require.NoError(t, err)
	defer ln.Close()
	to := ln.Addr()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()

	legit := make(chan error, 1)
	flooding := make(chan struct{})
	go func() {
		<-flooding
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		legit <- legitSession(ctx, to, ln)
	}()
	var peak uint64
	for i := range n {
		if i == n/4 {
			close(flooding)
		}
		src := fmt.Sprintf("127.1.%d.%d:0", i/250, i%250+1)
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(src)))
		require.NoError(t, err)
		_, err = c.WriteTo(rawInit(uint32(i+1), false), net.UDPAddrFromAddrPort(netip.MustParseAddrPort(to)))
		require.NoError(t, err)
		require.NoError(t, c.Close())
		if i%100 == 99 {
			// The listener keeps within 200 INITs of the flood, so that
			// a loaded host's socket buffer drops none: every INIT is
			// answered or rate-limited, and counted.
			require.Eventually(t, func() bool {
				st := ln.HandshakeStats()
				return st.InitAcks+st.RateLimited+200 >= uint64(i+1)
			}, 20*time.Second, time.Millisecond)
		}
		if i%2000 == 0 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	}
	require.NoError(t, <-legit, "a legitimate session during the flood")
	st := ln.HandshakeStats()
	require.Eventually(t, func() bool {
		st = ln.HandshakeStats()
		return st.InitAcks+st.RateLimited >= n
	}, 10*time.Second, 10*time.Millisecond, "every INIT seen: %+v", st)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	peakGrowth := int64(peak) - int64(before.HeapInuse)
	t.Logf("%d INITs: %+v; heap in use %+d KiB after, peak %+d KiB; goroutines %d -> %d",
		n, st, growth>>10, peakGrowth>>10, goroutines, runtime.NumGoroutine())
	assert.Less(t, growth, int64(8<<20), "heap after the flood")
	assert.Less(t, peakGrowth, int64(16<<20), "heap during the flood")
	// The legitimate session's goroutines end after its Abort: wait.
	assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= goroutines+8 }, 10*time.Second, 10*time.Millisecond,
		"no goroutine per INIT: %d, %d before", runtime.NumGoroutine(), goroutines)
	assert.Equal(t, uint64(1), st.CookiesOK, "only the legitimate client's association")
}

// legitSession dials the listener, opens a session and echoes a segment.
func legitSession(ctx context.Context, to string, ln *Listener) error {
	accepted := make(chan *Association, 1)
	go func() {
		a, err := ln.Accept(ctx)
		if err == nil {
			accepted <- a
		}
	}()
	cli, err := Dial(ctx, to, Config{Stack: pion.Stack(pion.Config{})})
	if err != nil {
		return err
	}
	defer cli.Abort()
	var srv *Association
	select {
	case srv = <-accepted:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer srv.Abort()
	return openSession(ctx, cli, srv)
}

// openSession opens stream 1 from cli and accepts it on srv.
func openSession(ctx context.Context, cli, srv *Association) error {
	got := make(chan error, 1)
	go func() {
		in, err := srv.Accept(ctx)
		if err == nil {
			_, err = in.Accept(AcceptParams{})
		}
		got <- err
	}()
	if _, err := cli.Open(ctx, 1, OpenRequest{}); err != nil {
		return err
	}
	return <-got
}

// TestPionListener_SpoofedAbortIgnored_RFC9260_8_5: an ABORT from the
// client's own address and port but without the association's tag (an
// off-path attacker guessing) is dropped before pion sees it (pion checks
// no tag: the same packet killed the association before); the
// association carries on.
func TestPionListener_SpoofedAbortIgnored_RFC9260_8_5(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", Config{Stack: pion.Stack(pion.Config{})})
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan *Association, 1)
	go func() {
		a, err := ln.Accept(ctx)
		if err == nil {
			accepted <- a
		}
	}()
	// The client's socket is ours, so the spoof comes from its address.
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	raddr, err := net.ResolveUDPAddr("udp4", ln.Addr())
	require.NoError(t, err)
	pc := &connectedUDP{UDPConn: uc, raddr: raddr}
	pt, err := pion.NewTransport(ctx, pc, true, pion.Config{})
	require.NoError(t, err)
	cli := NewAssociation(pt, Config{KeepIdle: true})
	defer cli.Abort()
	srv := <-accepted
	defer srv.Abort()

	spoof := wire.AppendHeader(nil, wire.Header{SrcPort: 5000, DstPort: 5000, VerificationTag: 0xdeadbeef})
	spoof = (&wire.Abort{}).Append(spoof)
	wire.SetChecksum(spoof)
	_, err = uc.WriteTo(spoof, raddr)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ln.HandshakeStats().ForeignTag >= 1 }, 5*time.Second, 5*time.Millisecond)

	// Still alive: a session opens.
	require.NoError(t, openSession(ctx, cli, srv))
	select {
	case <-srv.Done():
		t.Fatalf("the server's association ended: %v", srv.Err())
	default:
	}
}

// connectedUDP is an unconnected UDP socket used as the client's conn to
// one peer, so that the test can write spoofed packets from its address.
type connectedUDP struct {
	*net.UDPConn
	raddr *net.UDPAddr
}

func (c *connectedUDP) Read(b []byte) (int, error) {
	n, _, err := c.UDPConn.ReadFrom(b)
	return n, err
}
func (c *connectedUDP) Write(b []byte) (int, error) { return c.UDPConn.WriteTo(b, c.raddr) }
func (c *connectedUDP) RemoteAddr() net.Addr        { return c.raddr }

// TestPionListener_AssociationCaps: a peer address holds at most
// MaxAssociationsPerAddress associations; a valid COOKIE ECHO beyond gets
// an ABORT and nothing is kept; another address is still served.
func TestPionListener_AssociationCaps(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", Config{Stack: pion.Stack(pion.Config{MaxAssociationsPerAddress: 2})})
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		for {
			a, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = a.Abort() })
		}
	}()
	dialFrom := func(ip string) (*Association, error) {
		uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
		require.NoError(t, err)
		raddr, err := net.ResolveUDPAddr("udp4", ln.Addr())
		require.NoError(t, err)
		dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
		defer dcancel()
		pt, err := pion.NewTransport(dctx, &connectedUDP{UDPConn: uc, raddr: raddr}, true, pion.Config{})
		if err != nil {
			return nil, err
		}
		a := NewAssociation(pt, Config{})
		t.Cleanup(func() { _ = a.Abort() })
		return a, nil
	}
	for range 2 {
		_, err := dialFrom("127.0.0.1")
		require.NoError(t, err)
	}
	_, err = dialFrom("127.0.0.1")
	require.Error(t, err, "a third association from the same address")
	assert.Positive(t, ln.HandshakeStats().RefusedFull)
	_, err = dialFrom("127.0.0.3")
	require.NoError(t, err, "another address")
}
