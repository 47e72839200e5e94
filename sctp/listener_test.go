package sctp

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctp/wire"
)

// rawClient speaks SCTP chunk by chunk to a Listener from one UDP
// socket, with as many associations as SCTP source ports.
type rawClient struct {
	t   *testing.T
	pc  *net.UDPConn
	to  *net.UDPAddr
	buf []byte
}

// rawAssoc is one association of a rawClient: our SCTP port, the tag the
// listener expects (its Initiate Tag) and its Initial TSN.
type rawAssoc struct {
	port       uint16
	tag        uint32
	peerTSN    uint32
	ourTag     uint32
	ourNextTSN uint32
}

func newRawClient(t *testing.T, l *Listener, ip string) *rawClient {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	return &rawClient{t: t, pc: pc, to: l.Addr().(*net.UDPAddr), buf: make([]byte, 1<<16)}
}

func (c *rawClient) send(port uint16, tag uint32, chunks ...[]byte) {
	b := wire.AppendHeader(nil, wire.Header{SrcPort: port, DstPort: DefaultPort, VerificationTag: tag})
	for _, ch := range chunks {
		b = append(b, ch...)
	}
	wire.SetChecksum(b)
	_, err := c.pc.WriteToUDP(b, c.to)
	require.NoError(c.t, err)
}

// recv returns the next packet's header and its first chunk of type want
// (any type if want is 0), skipping others; ok false after d.
func (c *rawClient) recv(want wire.ChunkType, d time.Duration) (wire.Header, wire.Chunk, bool) {
	c.t.Helper()
	require.NoError(c.t, c.pc.SetReadDeadline(time.Now().Add(d)))
	for {
		n, _, err := c.pc.ReadFromUDP(c.buf)
		if err != nil {
			return wire.Header{}, wire.Chunk{}, false
		}
		pkt, err := wire.ParsePacket(append([]byte(nil), c.buf[:n]...))
		require.NoError(c.t, err)
		it := pkt.Chunks()
		for ch, ok := it.Next(); ok; ch, ok = it.Next() {
			if want == 0 || ch.Type == want {
				return pkt.Header, ch, true
			}
		}
	}
}

func (c *rawClient) init(port uint16, tag uint32) {
	in := wire.Init{InitiateTag: tag, ARwnd: 1 << 16, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1000}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	c.send(port, 0, in.Append(nil))
}

// handshake sets up the association of SCTP port port.
func (c *rawClient) handshake(port uint16) rawAssoc {
	c.t.Helper()
	ourTag := RandomTag()
	c.init(port, ourTag)
	_, ch, ok := c.recv(wire.ChunkInitAck, 5*time.Second)
	require.True(c.t, ok, "INIT ACK")
	ack, err := wire.ParseInit(ch)
	require.NoError(c.t, err)
	c.send(port, ack.InitiateTag, (&wire.CookieEcho{Cookie: ack.Params.StateCookie}).Append(nil))
	_, _, ok = c.recv(wire.ChunkCookieAck, 5*time.Second)
	require.True(c.t, ok, "COOKIE ACK")
	return rawAssoc{port: port, tag: ack.InitiateTag, peerTSN: ack.InitialTSN, ourTag: ourTag, ourNextTSN: 1000}
}

func heartbeat(info string) []byte { return (&wire.Heartbeat{Info: []byte(info)}).Append(nil) }

// TestRFC9260_8_4_PacketsJustAfterEnd: a packet that arrives right after
// its association ended is out of the blue, and gets §8.4's answer at
// once: a HEARTBEAT sent just behind the ABORT that ended it gets an
// ABORT with the T bit (rule 8), a new INIT an INIT ACK.
func TestRFC9260_8_4_PacketsJustAfterEnd(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	accepted := acceptAll(ctx, t, l, nil)
	c := newRawClient(t, l, "127.0.0.1")
	for i := range 5 {
		ra := c.handshake(DefaultPort)
		srv := <-accepted
		t.Cleanup(func() { _ = srv.Abort() })
		// The ABORT and the HEARTBEAT leave back to back.
		c.send(ra.port, ra.tag, (&wire.Abort{}).Append(nil))
		c.send(ra.port, ra.tag, heartbeat("after the end"))
		h, ch, ok := c.recv(wire.ChunkAbort, 5*time.Second)
		require.True(t, ok, "round %d: an ABORT answers the HEARTBEAT", i)
		ab, err := wire.ParseAbort(ch)
		require.NoError(t, err)
		assert.True(t, ab.T, "the T bit (§8.4 rule 8)")
		assert.Equal(t, ra.tag, h.VerificationTag, "the tag of the packet answered")
		<-srv.Done()
	}
	// A new INIT right behind an ABORT gets an INIT ACK.
	ra := c.handshake(DefaultPort)
	<-accepted
	c.send(ra.port, ra.tag, (&wire.Abort{}).Append(nil))
	c.init(DefaultPort, 77)
	h, _, ok := c.recv(wire.ChunkInitAck, 5*time.Second)
	require.True(t, ok, "an INIT ACK")
	assert.Equal(t, uint32(77), h.VerificationTag)
}

// TestRFC9260_8_5_AssociationsByPortsAndTag: one UDP socket holds three
// associations with the listener, told apart by their SCTP ports and
// Verification Tags (RFC 9260 §8.5; RFC 6951 §5.1: UDP is only the
// encapsulation): each one's DATA reaches its own association, and the
// ABORT of one ends only that one.
func TestRFC9260_8_5_AssociationsByPortsAndTag(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	accepted := acceptAll(ctx, t, l, nil)
	c := newRawClient(t, l, "127.0.0.1")
	var ras []rawAssoc
	recs := map[uint16]*rxRec{}
	srvs := map[uint16]*Association{}
	for _, port := range []uint16{7001, 7002, 7003} {
		ra := c.handshake(port)
		srv := <-accepted
		t.Cleanup(func() { _ = srv.Abort() })
		assert.Equal(t, port, srv.peerPort)
		rec := newRec()
		srv.Start(rec.fn, func(error) {})
		recs[port], srvs[port] = rec, srv
		ras = append(ras, ra)
	}
	assert.Equal(t, 3, l.Stats().Associations)
	for _, ra := range ras {
		d := wire.Data{TSN: ra.ourNextTSN, StreamID: 1, PPID: 16, Unordered: true, Beginning: true, Ending: true,
			UserData: []byte{byte(ra.port)}}
		c.send(ra.port, ra.tag, d.Append(nil))
	}
	for _, ra := range ras {
		got := recs[ra.port].wait(t, 1)
		assert.Equal(t, []byte{byte(ra.port)}, got[0].b, "port %d's message to its association", ra.port)
	}
	c.send(ras[1].port, ras[1].tag, (&wire.Abort{}).Append(nil))
	<-srvs[ras[1].port].Done()
	require.Eventually(t, func() bool { return l.Stats().Associations == 2 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, StateEstablished, srvs[ras[0].port].State())
	assert.Equal(t, StateEstablished, srvs[ras[2].port].State())
}

// TestRFC6951_5_4_NATRebinding: a UDP relay between a dialer and the
// listener changes its source port mid-transfer, as a NAT that rebinds.
// The listener checks the Verification Tag of the first packet from the
// new port and takes the port as the peer's encapsulation port (RFC 6951
// §5.4): every message arrives, the association stays, and the
// listener's answers go to the new port.
func TestRFC6951_5_4_NATRebinding(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := newRec()
	accepted := acceptAll(ctx, t, l, rec)

	// The relay: the client talks to front; front's traffic leaves from
	// back, which is swapped for a new socket on demand.
	front, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer front.Close()
	var back atomic.Pointer[net.UDPConn]
	var client atomic.Pointer[net.UDPAddr]
	srvAddr := l.Addr().(*net.UDPAddr)
	var wg sync.WaitGroup
	pump := func(b *net.UDPConn) {
		defer wg.Done()
		buf := make([]byte, 1<<16)
		for {
			n, _, err := b.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if ca := client.Load(); ca != nil {
				_, _ = front.WriteToUDP(buf[:n], ca)
			}
		}
	}
	newBack := func() *net.UDPConn {
		b, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		wg.Add(1)
		go pump(b)
		return b
	}
	back.Store(newBack())
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1<<16)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			client.Store(from)
			_, _ = back.Load().WriteToUDP(buf[:n], srvAddr)
		}
	}()
	defer func() {
		_ = front.Close()
		_ = back.Load().Close()
		wg.Wait()
	}()

	cli, err := Dial(ctx, "udp4", front.LocalAddr().String(), nil)
	require.NoError(t, err)
	defer cli.Abort()
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	srv := <-accepted
	defer srv.Abort()
	const n = 200
	msg := make([]byte, 1000)
	for i := range n {
		if i == n/2 {
			old := back.Swap(newBack())
			time.AfterFunc(200*time.Millisecond, func() { _ = old.Close() }) // packets in flight
		}
		msg[0] = byte(i)
		require.NoError(t, cli.WriteMsg(uint16(i%4), 16, msg))
	}
	got := rec.wait(t, n)
	seen := map[byte]bool{}
	for _, m := range got {
		seen[m.b[0]] = true
	}
	assert.Len(t, seen, n, "every message (unordered) arrived")
	assert.Equal(t, StateEstablished, srv.State())
	assert.Equal(t, StateEstablished, cli.State())
	assert.Equal(t, uint64(1), l.Stats().Rebinds)
	assert.Equal(t, back.Load().LocalAddr().(*net.UDPAddr).Port, srv.RemoteAddr().(*net.UDPAddr).Port,
		"the listener sends to the new port")
	// Both directions still carry data after the rebinding.
	require.NoError(t, srv.WriteMsg(1, 16, []byte("back to you")))
	require.Eventually(t, func() bool { return cli.Stats().MessagesReceived == 1 }, 10*time.Second, 5*time.Millisecond)
}

// TestRFC5061_4_2_6_ListenerNoAdaptation: a listener with
// Config.NoAdaptation sends an INIT ACK without an Adaptation Layer
// Indication; by default it carries the DDP indication (RFC 5043 §5.1).
func TestRFC5061_4_2_6_ListenerNoAdaptation(t *testing.T) {
	for _, none := range []bool{false, true} {
		l, err := Listen("udp4", "127.0.0.1:0", &Config{NoAdaptation: none, AllowMissingAdaptation: true})
		require.NoError(t, err)
		c := newRawClient(t, l, "127.0.0.1")
		c.init(DefaultPort, 99)
		_, ch, ok := c.recv(wire.ChunkInitAck, 5*time.Second)
		require.True(t, ok)
		ack, err := wire.ParseInit(ch)
		require.NoError(t, err)
		assert.Equal(t, !none, ack.Params.HasAdaptation, "NoAdaptation %v", none)
		if !none {
			assert.Equal(t, wire.AdaptationDDP, ack.Params.Adaptation)
		}
		require.NoError(t, l.Close())
	}
}
