package sctp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/handshake"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
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
	b := wire.AppendHeader(nil, wire.Header{SrcPort: port, DstPort: defaultPort, VerificationTag: tag})
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
	ourTag := handshake.RandomTag()
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
		ra := c.handshake(defaultPort)
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
	ra := c.handshake(defaultPort)
	<-accepted
	c.send(ra.port, ra.tag, (&wire.Abort{}).Append(nil))
	c.init(defaultPort, 77)
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
		assert.Equal(t, port, srv.tcb.peerPort)
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
	assert.Equal(t, stateEstablished, srvs[ras[0].port].Stats().State)
	assert.Equal(t, stateEstablished, srvs[ras[2].port].Stats().State)
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
	assert.Equal(t, stateEstablished, srv.Stats().State)
	assert.Equal(t, stateEstablished, cli.Stats().State)
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
		c.init(defaultPort, 99)
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

// TestListener_FloodedAssociationDelaysNoOther: one association's
// packets are made expensive (3 ms each, in the listener's Tap) and 2,000
// of them sent at once: about 5 s of work for that association. Another
// association's HEARTBEATs, sent while that work is under way, are
// answered at once (within 1 s here, a wide margin on a loaded host: the
// read loop only demultiplexes, each association's queue has its own
// worker). The flooded queue holds what its cap allows and the rest is
// dropped and counted.
func TestListener_FloodedAssociationDelaysNoOther(t *testing.T) {
	var floodAddr atomic.Pointer[net.UDPAddr]
	tap := func(sent bool, _, remote netip.AddrPort, _ []byte) {
		if fa := floodAddr.Load(); !sent && fa != nil && remote == fa.AddrPort() {
			time.Sleep(3 * time.Millisecond)
		}
	}
	l, err := Listen("udp4", "127.0.0.1:0", &Config{Tap: tap, ReceiveBuffer: 64 << 10})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acceptAll(ctx, t, l, nil)

	f := newRawClient(t, l, "127.0.0.1")
	fa := f.handshake(defaultPort)
	v := newRawClient(t, l, "127.0.0.2")
	va := v.handshake(defaultPort)
	floodAddr.Store(f.pc.LocalAddr().(*net.UDPAddr))

	var floodAcks atomic.Int64
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, 1<<16)
		for {
			n, _, err := f.pc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if pkt, err := wire.ParsePacket(buf[:n]); err == nil {
				it := pkt.Chunks()
				for c, ok := it.Next(); ok; c, ok = it.Next() {
					if c.Type == wire.ChunkHeartbeatAck {
						floodAcks.Add(1)
					}
				}
			}
		}
	}()
	defer func() { _ = f.pc.Close(); <-readerDone }()

	const flood = 2000
	for range flood {
		f.send(fa.port, fa.tag, heartbeat("flood"))
	}
	require.Eventually(t, func() bool { return floodAcks.Load() > 0 }, 10*time.Second, time.Millisecond, "the flood is being worked on")
	var worst time.Duration
	for i := range 20 {
		start := time.Now()
		v.send(va.port, va.tag, heartbeat("probe"))
		_, _, ok := v.recv(wire.ChunkHeartbeatAck, 10*time.Second)
		require.True(t, ok, "probe %d answered", i)
		worst = max(worst, time.Since(start))
	}
	during := floodAcks.Load()
	t.Logf("worst HEARTBEAT round trip %v while the flood was worked on (%d of its packets answered by then); drops %d",
		worst, during, l.Stats().QueueDrops)
	assert.Less(t, during, int64(flood/2), "the probes ran while the flood was being worked on")
	assert.Less(t, worst, time.Second, "no HEARTBEAT waits for the other association's work")
	assert.Positive(t, l.Stats().QueueDrops, "the flooded queue is bounded")
}

// stallKind is how an attacker's association stalls after its handshake.
type stallKind int

const (
	stallSilent     stallKind = iota // sends nothing more, answers nothing
	stallRetransmit                  // the listener's DATA is never acknowledged
	stallShutdown                    // SHUTDOWN with the listener's DATA unacknowledged, then nothing
)

// attackPort is the SCTP port of an attacker's association of kind k.
func attackPort(k stallKind, i int) uint16 { return uint16(10000 + int(k)*1000 + i) }

func kindOfPort(p uint16) (stallKind, bool) {
	if p < 10000 || p >= 13000 {
		return 0, false
	}
	return stallKind((p - 10000) / 1000), true
}

// attack opens an association from c for each port, pipelined
// (retransmitting what goes unanswered, as a peer would: a full backlog
// drops a COOKIE ECHO), each stalling as its port's kind says, and
// returns how many were accepted and refused.
func (c *rawClient) attack(ports []uint16) (ok, refused int) {
	c.t.Helper()
	type hs struct {
		initTag, tag, tsn uint32
		cookie            []byte
		done              bool
	}
	st := map[uint16]*hs{}
	for _, p := range ports {
		st[p] = &hs{initTag: handshake.RandomTag()}
	}
	deadline := time.Now().Add(60 * time.Second)
	for ok+refused < len(ports) {
		if !time.Now().Before(deadline) {
			c.t.Errorf("handshakes: %d+%d of %d", ok, refused, len(ports))
			return ok, refused
		}
		for p, s := range st {
			switch {
			case s.done:
			case s.cookie == nil:
				c.init(p, s.initTag)
			default:
				c.send(p, s.tag, (&wire.CookieEcho{Cookie: s.cookie}).Append(nil))
			}
		}
		// One round: a second for the answers (the listener's
		// HEARTBEATs and retransmissions keep coming, so no silence
		// ends it).
		for end := time.Now().Add(time.Second); time.Now().Before(end); {
			h, ch, okr := c.recv(0, time.Until(end))
			if !okr {
				break
			}
			s := st[h.DstPort]
			if s == nil || s.done {
				continue
			}
			switch ch.Type {
			case wire.ChunkInitAck:
				if s.cookie != nil {
					continue
				}
				ack, err := wire.ParseInit(ch)
				if !assert.NoError(c.t, err) {
					return ok, refused
				}
				s.tag, s.tsn = ack.InitiateTag, ack.InitialTSN
				s.cookie = append([]byte(nil), ack.Params.StateCookie...)
				c.send(h.DstPort, s.tag, (&wire.CookieEcho{Cookie: s.cookie}).Append(nil))
			case wire.ChunkCookieAck:
				s.done = true
				ok++
				if k, _ := kindOfPort(h.DstPort); k == stallShutdown {
					c.send(h.DstPort, s.tag, (&wire.Shutdown{CumTSNAck: s.tsn - 1}).Append(nil))
				}
			case wire.ChunkAbort:
				if s.cookie != nil {
					s.done = true
					refused++
				}
			}
		}
	}
	return ok, refused
}

// TestListener_StalledAssociationsEvictedAndReaped: 2,000 associations
// from 32 addresses complete the handshake and stall, a third each way:
// silent, retransmitting into silence (the listener's DATA is never
// acknowledged), SHUTDOWN pending with the DATA unacknowledged and the
// peer gone. They fill the 1,024-slot table (the reaper held back until
// then, so that a slow attack on a loaded host fills it too), yet a new
// address completes a handshake and a transfer at once (a stalled
// association is evicted for it); with the reaper at StallTimeout every
// stalled one is gone within StallTimeout + a reaper tick, here 5 s + 1 s
// (each has been busy without progress since its handshake). An idle
// association costs at most one goroutine (its delivery; no receive
// worker while its queue is empty).
func TestListener_StalledAssociationsEvictedAndReaped(t *testing.T) {
	const (
		addrs   = 32
		total   = 2000
		stall   = 5 * time.Second
		bound   = stall + time.Second
		evict   = 300 * time.Millisecond
		perAddr = (total + addrs - 1) / addrs
	)
	rec := newRec()
	// Small buffers and packets: the race detector multiplies what 1,024
	// associations hold. Max.Retrans and T5 (5 RTO.Max) are left long, so
	// that only the reaper and eviction end the stalled ones.
	cfg := &Config{StallTimeout: stall, HeartbeatInterval: time.Second, InitAckRate: 1 << 20, MTU: 1500,
		SendBuffer: 64 << 10, ReceiveBuffer: 64 << 10, MaxRetrans: 1000, Backlog: 4096,
		RTO: RTOConfig{Initial: 200 * time.Millisecond, Min: 100 * time.Millisecond, Max: time.Minute}}
	l, err := Listen("udp4", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	defer l.Close()
	l.mu.Lock()
	l.evictAfter, l.stallTimeout = evict, time.Hour
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	var mu sync.Mutex
	var all []*Association
	go func() {
		for {
			a, err := l.Accept(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			all = append(all, a)
			mu.Unlock()
			k, attacker := kindOfPort(a.tcb.peerPort)
			if !attacker {
				a.Start(rec.fn, func(error) {})
				continue
			}
			a.Start(func(uint16, uint32, []byte) {}, func(error) {})
			if k != stallSilent {
				_ = a.WriteMsg(1, 16, make([]byte, 100))
			}
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range all {
			_ = a.Abort()
		}
	})
	base := runtime.NumGoroutine()

	attackStart := time.Now()
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i, n := 0, 0; i < addrs; i++ {
		c := newRawClient(t, l, fmt.Sprintf("127.0.20.%d", i+1))
		var ports []uint16
		for j := 0; j < perAddr && n < total; j, n = j+1, n+1 {
			ports = append(ports, attackPort(stallKind(n%3), j))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, r := c.attack(ports)
			ok.Add(int64(o))
			refused.Add(int64(r))
		}()
	}
	wg.Wait()
	attackEnd := time.Now()
	st := l.Stats()
	t.Logf("%d handshakes in %v: %d accepted, %d refused; held %d, evicted %d", total,
		attackEnd.Sub(attackStart).Round(time.Millisecond), ok.Load(), refused.Load(), st.Associations, st.Evicted)
	require.Equal(t, int64(total), ok.Load()+refused.Load())
	refill := func() {
		if n := l.Stats().Associations; n < defaultMaxAssociations {
			// One ended on its own meanwhile (a loaded host's timers): the
			// table is filled again, so that the new address needs an eviction.
			t.Logf("%d associations held: %+v; filling the table again", n, l.Stats())
			c := newRawClient(t, l, fmt.Sprintf("127.0.21.%d", 1+n%200))
			var ports []uint16
			for j := range defaultMaxAssociations - n {
				ports = append(ports, attackPort(stallSilent, j))
			}
			c.attack(ports)
		}
		require.Eventually(t, func() bool { return l.Stats().Associations == defaultMaxAssociations }, 30*time.Second,
			10*time.Millisecond, "the table is full: %+v", l.Stats())
	}
	refill()
	require.Eventually(t, func() bool { return len(l.accept) == 0 }, 30*time.Second, 10*time.Millisecond, "every accepted one started")
	require.Eventually(t, func() bool { return runtime.NumGoroutine()-base <= defaultMaxAssociations+16 },
		30*time.Second, 10*time.Millisecond, "at most one goroutine per held association")
	t.Logf("goroutines: %d for %d associations", runtime.NumGoroutine()-base, l.Stats().Associations)

	// A new address, once the stalled ones are evictable (quiet for
	// evict) and the listener has worked off what the attack left in its
	// socket (retransmitted COOKIE ECHOs make associations too), with the
	// table still full.
	prev := l.HandshakeStats().CookiesOK
	require.Eventually(t, func() bool {
		cur := l.HandshakeStats().CookiesOK
		quiet := cur == prev
		prev = cur
		return quiet
	}, 60*time.Second, evict, "the attack's packets worked off")
	refill()
	evicted := l.Stats().Evicted
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 99)})
	require.NoError(t, err)
	defer uc.Close()
	cli, err := DialConn(ctx, &spoofableConn{UDPConn: uc, raddr: l.Addr().(*net.UDPAddr)},
		&Config{RTO: RTOConfig{Initial: 500 * time.Millisecond}})
	require.NoError(t, err, "a new address completes its handshake: %+v %+v", l.Stats(), l.HandshakeStats())
	defer cli.Abort()
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, cli.WriteMsg(2, 16, []byte("served")))
	got := rec.wait(t, 1)
	assert.Equal(t, []byte("served"), got[0].b)
	assert.Greater(t, l.Stats().Evicted, evicted, "evicted for the new address")

	l.mu.Lock()
	l.stallTimeout = stall
	l.mu.Unlock()
	reapStart := time.Now()
	require.Eventually(t, func() bool { return l.Stats().Associations == 1 }, 10*bound, 50*time.Millisecond,
		"the stalled associations are gone")
	gone := time.Since(reapStart)
	st = l.Stats()
	t.Logf("stalled ones gone %v after the reaper's start (bound %v); evicted %d, reaped %d, queue drops %d",
		gone.Round(time.Millisecond), bound, st.Evicted, st.Stalled, st.QueueDrops)
	assert.Less(t, gone, 2*bound, "within the bound (and a margin for a loaded host)")
	assert.Equal(t, stateEstablished, cli.Stats().State, "the new client's association lives on")
}

// TestRFC9260_8_1_MaxRetransEndsSilentPeer: a listener's DATA that the
// peer never acknowledges ends the association after
// Association.Max.Retrans + 1 consecutive T3-rtx expiries (RFC 9260 §8.1,
// §8.2), with ErrPeerUnresponsive, also without the stall timeout. The
// time that takes is the RTO's back-off (§6.3.3 E2) summed up to RTO.Max:
// with the defaults of §16 (1 s, 60 s, 10) about 6 minutes
// (docs/security.md), which is why a listener also has StallTimeout.
func TestRFC9260_8_1_MaxRetransEndsSilentPeer(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", &Config{StallTimeout: -1, MaxRetrans: 3,
		RTO: RTOConfig{Initial: 100 * time.Millisecond, Min: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	accepted := acceptAll(ctx, t, l, nil)
	c := newRawClient(t, l, "127.0.0.1")
	c.handshake(defaultPort)
	srv := <-accepted
	t.Cleanup(func() { _ = srv.Abort() })
	srv.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, srv.WriteMsg(1, 16, []byte("never acknowledged")))
	select {
	case <-srv.Done():
	case <-ctx.Done():
		t.Fatalf("not ended: %+v", srv.Stats())
	}
	require.ErrorIs(t, srv.Err(), ErrPeerUnresponsive)
	assert.Equal(t, uint64(4), srv.Stats().T3Expiries, "Max.Retrans + 1 expiries")
	assert.Equal(t, uint64(0), l.Stats().Stalled, "ended by Max.Retrans, not the reaper")
}

// A coalesced read (UDP_GRO) is handed to the association's queue in its
// read buffer while the queue has room; once the queue is half full it is
// copied into a buffer of its size, so that the queue, bounded by the
// buffers it holds, takes as many reads as the window lets the peer send
// (a worker that lagged a few milliseconds behind a fast peer dropped
// reads there, each a fast retransmit and a window reduction at the peer).
func TestListenerQueue_CompactsCoalescedReadsUnderPressure(t *testing.T) {
	l := &Listener{queueCap: 8 * largeBuf, listenerQueueCap: 64 << 20}
	m := &member{running: true} // a worker runs: enqueue starts none
	read := func() *[]byte { return getBuf(largeBuf) }
	const n = 25000 // 17 packets of MTU 1500, coalesced
	handed := 0
	for range 4 {
		if l.enqueue(m, read(), n, 1472, netip.AddrPort{}, netip.Addr{}, 0) {
			handed++
		}
	}
	assert.Equal(t, 4, handed, "below half: handed over as read")
	assert.Equal(t, 4*largeBuf, m.qBytes)
	for range 7 {
		bp := read()
		require.False(t, l.enqueue(m, bp, n, 1472, netip.AddrPort{}, netip.Addr{}, 0), "over half: copied, the read buffer stays the caller's")
		putBuf(bp)
	}
	assert.Equal(t, 4*largeBuf+7*bufClass(n), m.qBytes, "held as what arrived, in its class")
	assert.Zero(t, l.stats.QueueDrops.Load(), "eleven reads fit where eight read buffers would")
	for _, it := range m.q {
		assert.Equal(t, n, it.n)
		putBuf(it.bp)
	}
}
