//go:build linux

package sctp

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/pathmgr"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// dualPath makes two namespaces joined by two links (root only).
func dualPath(t *testing.T) *netns.DualPath {
	t.Helper()
	require.Zero(t, os.Geteuid(), "needs root: network namespaces")
	d, err := netns.NewDualPath(1500)
	require.NoError(t, err)
	t.Cleanup(d.Destroy)
	return d
}

// mhConfig: a LAN's RTO bounds and quick HEARTBEATs, so that a path
// comes back soon after its link does.
func mhConfig() Config {
	return Config{Streams: 16, RTO: RTOConfig{Initial: 500 * time.Millisecond, Min: 200 * time.Millisecond, Max: time.Second},
		HeartbeatInterval: 300 * time.Millisecond}
}

// mhPair starts a listener in A on listen (hosts of A, "%d" for its
// port) and dials it from B to dial with local as Config.LocalAddr.
// Each of adjust, if any, changes the configuration of one end (server
// true: the listener's).
func mhPair(t *testing.T, d *netns.DualPath, cfg Config, listen, dial, local string,
	adjust ...func(server bool, c *Config)) (cli, srv *Association) {
	t.Helper()
	scfg := cfg
	for _, f := range adjust {
		f(true, &scfg)
	}
	l, port := mhListen(t, d, listen, scfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ccfg := cfg
	ccfg.LocalAddr = local
	for _, f := range adjust {
		f(false, &ccfg)
	}
	require.NoError(t, netns.In(d.B, func() (err error) {
		cli, err = Dial(ctx, "udp4", fmt.Sprintf("%s:%d", dial, port), &ccfg)
		return err
	}))
	srv, err := l.Accept(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Abort(); _ = srv.Abort() })
	return cli, srv
}

// mhListen starts a listener in A on listen (hosts of A) and returns it
// with its port.
func mhListen(t *testing.T, d *netns.DualPath, listen string, cfg Config) (*Listener, int) {
	t.Helper()
	var l *Listener
	require.NoError(t, netns.In(d.A, func() (err error) {
		l, err = Listen("udp4", listen+":0", &cfg)
		return err
	}))
	t.Cleanup(func() { _ = l.Close() })
	return l, l.pc.LocalAddr().(*net.UDPAddr).Port
}

func pathState(a *Association, i int) string {
	ps := a.Stats().Paths
	if i >= len(ps) {
		return ""
	}
	return ps[i].State
}

// mhSink checks what the server receives: each message once, byte-exact,
// and the longest pause between deliveries after mark.
type mhSink struct {
	mu      sync.Mutex
	seen    [16]map[uint32]bool
	n       int
	bad     int
	last    time.Time
	marked  bool
	gap     time.Duration
	allDone chan struct{}
	total   int
}

const mhMsgLen = 4096

func mhMessage(sid uint16, i uint32) []byte {
	b := make([]byte, mhMsgLen)
	for k := range b {
		b[k] = byte(int(sid)*31 + int(i)*7 + k)
	}
	binary.BigEndian.PutUint32(b, i)
	return b
}

func newSink(total int) *mhSink {
	s := &mhSink{allDone: make(chan struct{}), total: total}
	for i := range s.seen {
		s.seen[i] = map[uint32]bool{}
	}
	return s
}

func (s *mhSink) take(sid uint16, _ uint32, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.marked && !s.last.IsZero() && now.Sub(s.last) > s.gap {
		s.gap = now.Sub(s.last)
	}
	s.last = now
	if int(sid) >= len(s.seen) || len(b) != mhMsgLen {
		s.bad++
		return
	}
	i := binary.BigEndian.Uint32(b)
	if s.seen[sid][i] || string(b) != string(mhMessage(sid, i)) {
		s.bad++
		return
	}
	s.seen[sid][i] = true
	s.n++
	if s.n == s.total {
		close(s.allDone)
	}
}

func (s *mhSink) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.n }

// mhWriteAll writes perStream messages on each of 16 streams, one
// goroutine per stream; wait returns the first error once all are done.
func mhWriteAll(cli *Association, perStream int) (wait func() error) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for sid := range uint16(16) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range uint32(perStream) {
				if err := cli.WriteMsg(sid, 0, mhMessage(sid, i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	return func() error {
		wg.Wait()
		close(errs)
		return <-errs
	}
}

// mhFailover runs 16 streams of messages from B to A over both links and
// breaks link 0 (fail) mid-transfer, then mends it (mend).
func mhFailover(t *testing.T, fail, mend func(d *netns.DualPath) error) {
	d := dualPath(t)
	cli, srv := mhPair(t, d, mhConfig(), d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	require.Eventually(t, func() bool { return pathState(cli, 1) == "active" }, 10*time.Second, 10*time.Millisecond,
		"the second path is confirmed by a HEARTBEAT (§5.4)")
	const perStream = 250
	sink := newSink(16 * perStream)
	srv.Start(sink.take, func(error) {})
	wait := mhWriteAll(cli, perStream)
	require.Eventually(t, func() bool { return sink.count() >= sink.total/3 }, 30*time.Second, time.Millisecond)
	sink.mu.Lock()
	sink.marked = true
	sink.mu.Unlock()
	stop := make(chan struct{})
	starved := starvation(stop)
	require.NoError(t, fail(d))
	select {
	case <-sink.allDone:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d of %d messages delivered", sink.count(), sink.total)
	}
	close(stop)
	late := <-starved
	require.NoError(t, wait())
	sink.mu.Lock()
	gap, bad := sink.gap, sink.bad
	sink.mu.Unlock()
	assert.Zero(t, bad, "duplicate or corrupt messages")
	ps := cli.Stats().Paths
	require.Len(t, ps, 2)
	assert.NotZero(t, cli.mh.dataPackets[1], "DATA went over link 1")
	t.Logf("longest delivery gap after the failure: %v (the process waited up to %v for a core); paths %+v", gap, late, ps)
	assert.Less(t, gap, 1500*time.Millisecond+late, "failover within the issue's bound, plus what a loaded host withheld")
	require.NoError(t, mend(d))
	require.Eventually(t, func() bool { return pathState(cli, 0) == "active" }, 20*time.Second, 10*time.Millisecond,
		"path 0 is active again once its HEARTBEAT is answered")
}

// TestMultihoming_PrimaryCut_RFC9260_6_4: the primary's link goes down
// (sends fail) mid-transfer; DATA moves to the other path.
func TestMultihoming_PrimaryCut_RFC9260_6_4(t *testing.T) {
	mhFailover(t, func(d *netns.DualPath) error { return d.Cut(0) }, func(d *netns.DualPath) error { return d.Restore(0) })
}

// TestMultihoming_BlackHole_RFC9260_6_4: the primary's packets vanish
// (the link stays up); T3-rtx moves DATA to the other path.
func TestMultihoming_BlackHole_RFC9260_6_4(t *testing.T) {
	mhFailover(t, func(d *netns.DualPath) error { return d.BlackHole(0) }, func(d *netns.DualPath) error { return d.Heal(0) })
}

// TestMultihoming_BothCut_RFC9260_8_1: with every path down,
// Association.Max.Retrans ends the association and a blocked writer
// returns an error.
func TestMultihoming_BothCut_RFC9260_8_1(t *testing.T) {
	d := dualPath(t)
	cfg := mhConfig()
	cfg.MaxRetrans = 4
	cfg.SendBuffer = 64 << 10
	cli, srv := mhPair(t, d, cfg, d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	require.Eventually(t, func() bool { return pathState(cli, 1) == "active" }, 10*time.Second, 10*time.Millisecond)
	srv.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, d.Cut(0))
	require.NoError(t, d.Cut(1))
	werr := make(chan error, 1)
	go func() {
		for {
			if err := cli.WriteMsg(0, 0, make([]byte, mhMsgLen)); err != nil {
				werr <- err
				return
			}
		}
	}()
	select {
	case <-cli.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the association outlived Association.Max.Retrans with both paths down")
	}
	require.Error(t, cli.Err())
	require.Error(t, <-werr)
}

// TestMultihoming_UnownedAddress_RFC9260_5_4: an INIT ACK listing an
// address the peer does not own makes a path that stays unconfirmed and
// never gets DATA.
func TestMultihoming_UnownedAddress_RFC9260_5_4(t *testing.T) {
	d := dualPath(t)
	const unowned = "10.99.0.1"
	cfg := mhConfig()
	var mu sync.Mutex
	var toUnowned, notHeartbeat int
	cfg.Tap = func(sent bool, _, remote netip.AddrPort, pkt []byte) {
		if !sent || remote.Addr() != netip.MustParseAddr(unowned) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		toUnowned++
		p, err := wire.ParsePacketNoChecksum(pkt)
		if err != nil || len(pkt) > 128 {
			notHeartbeat++ // a PLPMTUD probe is large (RFC 8899 §6.2)
			return
		}
		it := wire.NewChunkIter(p.ChunkBytes())
		for c, ok := it.Next(); ok; c, ok = it.Next() {
			if c.Type != wire.ChunkHeartbeat {
				notHeartbeat++
			}
		}
	}
	cli, srv := mhPair(t, d, cfg, d.AAddr[0]+"/"+d.AAddr[1]+"/"+unowned, d.AAddr[0], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	sink := newSink(16 * 20)
	srv.Start(sink.take, func(error) {})
	for sid := range uint16(16) {
		for i := range uint32(20) {
			require.NoError(t, cli.WriteMsg(sid, 0, mhMessage(sid, i)))
		}
	}
	<-sink.allDone
	require.Eventually(t, func() bool { return pathState(cli, 1) == "active" }, 10*time.Second, 10*time.Millisecond)
	cli.mu.Lock()
	id, ok := cli.mh.pm.Lookup(netip.AddrPortFrom(netip.MustParseAddr(unowned), cli.primaryPath().addr.Port()))
	require.True(t, ok, "the listed address is a path")
	assert.Equal(t, pathmgr.Unconfirmed, cli.mh.pm.Info(id).State)
	assert.Zero(t, cli.mh.dataPackets[id], "DATA sent to an unconfirmed address")
	assert.NotZero(t, cli.mh.dataPackets[0])
	cli.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	assert.NotZero(t, toUnowned, "the listed address is probed with HEARTBEATs (§5.4)")
	assert.Zero(t, notHeartbeat, "anything but a small HEARTBEAT to an unconfirmed address")
}

// TestMultihoming_ListedAddresses_RFC9260_5_1_2: INIT and INIT ACK list
// the local addresses only where more than one is configured.
func TestMultihoming_ListedAddresses_RFC9260_5_1_2(t *testing.T) {
	d := dualPath(t)
	for _, tc := range []struct {
		name               string
		multi              bool
		initAddrs, ackAddr int
	}{
		{"one address each", false, 0, 0},
		{"two addresses each", true, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			counts := map[wire.ChunkType]int{}
			cfg := mhConfig()
			cfg.Tap = func(_ bool, _, _ netip.AddrPort, pkt []byte) {
				p, err := wire.ParsePacketNoChecksum(pkt)
				if err != nil {
					return
				}
				it := wire.NewChunkIter(p.ChunkBytes())
				for c, ok := it.Next(); ok; c, ok = it.Next() {
					if c.Type == wire.ChunkInit || c.Type == wire.ChunkInitAck {
						in, err := wire.ParseInit(c)
						if err == nil {
							mu.Lock()
							counts[c.Type] = in.Params.NumAddrs
							mu.Unlock()
						}
					}
				}
			}
			listen, dial, local := d.AAddr[0], d.AAddr[0], d.BAddr[0]+":0"
			if tc.multi {
				listen, dial, local = d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0"
			}
			cli, _ := mhPair(t, d, cfg, listen, dial, local)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.initAddrs, counts[wire.ChunkInit], "INIT")
			assert.Equal(t, tc.ackAddr, counts[wire.ChunkInitAck], "INIT ACK")
			assert.Equal(t, tc.multi, cli.Stats().Paths != nil)
		})
	}
}

// TestMultihoming_BothCutIdle_RFC9260_8_1: an idle association whose
// every path fails ends too: once no path is active, unanswered
// HEARTBEATs count against Association.Max.Retrans.
func TestMultihoming_BothCutIdle_RFC9260_8_1(t *testing.T) {
	d := dualPath(t)
	cfg := mhConfig()
	cfg.MaxRetrans = 4
	cli, srv := mhPair(t, d, cfg, d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	require.Eventually(t, func() bool { return pathState(cli, 1) == "active" }, 10*time.Second, 10*time.Millisecond)
	srv.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, d.Cut(0))
	require.NoError(t, d.Cut(1))
	select {
	case <-cli.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("an idle association outlived both paths: %+v", cli.Stats().Paths)
	}
	require.Error(t, cli.Err())
}

// pathOf is the index in a's Stats().Paths of the path to host, or -1.
func pathOf(a *Association, host string) (int, PathStats) {
	for i, p := range a.Stats().Paths {
		if p.Addr.Addr() == netip.MustParseAddr(host) {
			return i, p
		}
	}
	return -1, PathStats{}
}

// TestMultihoming_ListenerLearnsInitAddrs_RFC9260_5_4: the addresses the
// client's INIT lists reach the listener in the State Cookie: once the
// association is accepted, the client's second address is a path of the
// server although no packet could have come from it (its link is
// black-holed), unconfirmed until a HEARTBEAT is answered with its nonce.
func TestMultihoming_ListenerLearnsInitAddrs_RFC9260_5_4(t *testing.T) {
	d := dualPath(t)
	require.NoError(t, d.BlackHole(1))
	_, srv := mhPair(t, d, mhConfig(), d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	i, p := pathOf(srv, d.BAddr[1])
	require.GreaterOrEqual(t, i, 0, "the INIT's second address is a path of the server: %+v", srv.Stats().Paths)
	assert.Equal(t, "unconfirmed", p.State)
	srv.mu.Lock()
	assert.Zero(t, srv.mh.dataPackets[i], "no DATA to an unconfirmed address")
	srv.mu.Unlock()
	time.Sleep(time.Second)
	_, p = pathOf(srv, d.BAddr[1])
	assert.Equal(t, "unconfirmed", p.State, "no HEARTBEAT answered over the black hole")
	require.NoError(t, d.Heal(1))
	require.Eventually(t, func() bool { _, p := pathOf(srv, d.BAddr[1]); return p.State == "active" },
		20*time.Second, 10*time.Millisecond, "the path is confirmed once its HEARTBEAT is answered")
}

// TestMultihoming_UnownedAddressPassive_RFC9260_5_4: an INIT listing an
// address the client does not own makes a server path that stays
// unconfirmed and never gets DATA, while the owned ones carry it.
func TestMultihoming_UnownedAddressPassive_RFC9260_5_4(t *testing.T) {
	d := dualPath(t)
	const unowned = "10.99.0.2"
	cli, srv := mhPair(t, d, mhConfig(), d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0], d.BAddr[0]+"/"+d.BAddr[1]+"/"+unowned+":0")
	sink := newSink(16 * 20)
	cli.Start(sink.take, func(error) {})
	for sid := range uint16(16) {
		for i := range uint32(20) {
			require.NoError(t, srv.WriteMsg(sid, 0, mhMessage(sid, i)))
		}
	}
	select {
	case <-sink.allDone:
	case <-time.After(30 * time.Second):
		t.Fatalf("only %d of %d messages delivered", sink.count(), sink.total)
	}
	require.Eventually(t, func() bool { _, p := pathOf(srv, d.BAddr[1]); return p.State == "active" },
		20*time.Second, 10*time.Millisecond)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	id, ok := srv.mh.pm.Lookup(netip.AddrPortFrom(netip.MustParseAddr(unowned), srv.primaryPath().addr.Port()))
	require.True(t, ok, "the listed address is a path")
	assert.Equal(t, pathmgr.Unconfirmed, srv.mh.pm.Info(id).State)
	assert.Zero(t, srv.mh.dataPackets[id], "DATA sent to an unconfirmed address")
	assert.NotZero(t, srv.mh.dataPackets[0])
}

// TestMultihoming_PerPathWindows_RFC9260_7_2: each destination has its
// own cwnd and ssthresh. The primary's black hole reduces the primary's
// window only; the alternate starts from the initial window and grows on
// its own acknowledgements; once DATA is back on the primary, the
// primary's window moves and the alternate's stays as it was left.
func TestMultihoming_PerPathWindows_RFC9260_7_2(t *testing.T) {
	d := dualPath(t)
	cli, srv := mhPair(t, d, mhConfig(), d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	require.Eventually(t, func() bool { return pathState(cli, 1) == "active" }, 10*time.Second, 10*time.Millisecond)
	const perPhase = 60
	sink := newSink(16 * (3*perPhase + 1))
	srv.Start(sink.take, func(error) {})
	sent := 0
	phase := func(n int, base uint32) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for sid := range uint16(16) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range uint32(n) {
					if err := cli.WriteMsg(sid, 0, mhMessage(sid, base+i)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		sent += 16 * n
		require.Eventually(t, func() bool { return sink.count() >= sent }, 60*time.Second, time.Millisecond,
			"delivered %d of %d", sink.count(), sent)
	}
	cur := func() pathmgr.ID { cli.mu.Lock(); defer cli.mu.Unlock(); return cli.mh.cur }
	cli.mu.Lock()
	initial := initialCwnd(cli.maxPacket)
	cli.mu.Unlock()

	phase(perPhase, 0)
	ps := cli.Stats().Paths
	t.Logf("over path 0: %+v", ps)
	require.Equal(t, pathmgr.ID(0), cur())
	assert.Greater(t, ps[0].Cwnd, initial, "path 0's window grew with its acknowledgements")
	assert.Equal(t, initial, ps[1].Cwnd, "path 1 carried no DATA: the initial window (§7.2.1)")
	untouched := ps[1].SSThresh

	require.NoError(t, d.BlackHole(0))
	phase(perPhase, 1000)
	ps = cli.Stats().Paths
	t.Logf("failed over to path 1: %+v", ps)
	require.Equal(t, pathmgr.ID(1), cur())
	assert.Greater(t, ps[1].Cwnd, initial, "path 1's window grew from the initial one on its own")
	assert.Less(t, ps[0].SSThresh, untouched, "the loss on path 0 lowered path 0's ssthresh (§7.2.3)")
	assert.Greater(t, ps[1].SSThresh, ps[0].SSThresh, "path 0's loss is not path 1's")

	require.NoError(t, d.Heal(0))
	require.Eventually(t, func() bool { return pathState(cli, 0) == "active" }, 20*time.Second, 10*time.Millisecond)
	phase(1, 2000)
	require.Eventually(t, func() bool { return cur() == 0 }, 10*time.Second, time.Millisecond, "DATA back on the primary")
	before := cli.Stats().Paths
	phase(perPhase, 3000)
	ps = cli.Stats().Paths
	t.Logf("back on path 0: %+v", ps)
	require.Equal(t, pathmgr.ID(0), cur())
	assert.Equal(t, before[1].Cwnd, ps[1].Cwnd, "path 1's window stays as DATA left it")
	assert.Equal(t, before[1].SSThresh, ps[1].SSThresh)
	assert.NotEqual(t, before[0].Cwnd, ps[0].Cwnd, "path 0's window moves with its own acknowledgements")
	sink.mu.Lock()
	assert.Zero(t, sink.bad, "duplicate or corrupt messages")
	sink.mu.Unlock()
}

// TestMultihoming_PerPathT3_RFC9260_6_3_2: each destination with DATA
// outstanding has its own T3-rtx. With DATA in flight to path 0 (now
// black-holed) and then to path 1, path 0's timer expires: a timeout of
// path 0 only (potentially failed, RFC 7829; its window closed to one
// packet, §7.2.3), its chunks are retransmitted to path 1 (§6.4.1), and
// path 1's window, state and error counter are untouched.
func TestMultihoming_PerPathT3_RFC9260_6_3_2(t *testing.T) {
	d := dualPath(t)
	cli, srv := mhPair(t, d, mhConfig(), d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	require.Eventually(t, func() bool { return pathState(cli, 1) == "active" }, 10*time.Second, 10*time.Millisecond)
	// Messages of one chunk each, numbered in their first octet.
	var mu sync.Mutex
	got := map[byte]int{}
	srv.Start(func(_ uint16, _ uint32, b []byte) {
		mu.Lock()
		defer mu.Unlock()
		got[b[0]]++
	}, func(error) {})
	delivered := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	msg := func(i byte) []byte { return append([]byte{i}, make([]byte, 999)...) }
	for i := range byte(16) { // some DATA on path 0 first: its RTO is measured
		require.NoError(t, cli.WriteMsg(0, 0, msg(i)))
	}
	require.Eventually(t, func() bool { return delivered() == 16 }, 20*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { cli.mu.Lock(); defer cli.mu.Unlock(); return cli.oq.Len() == 0 }, 10*time.Second, time.Millisecond)
	before := cli.Stats()
	require.Zero(t, before.Paths[1].Errors)

	require.NoError(t, d.BlackHole(0))
	require.NoError(t, cli.WriteMsg(0, 0, msg(16)))
	require.NoError(t, cli.WriteMsg(0, 0, msg(17)))
	cli.mu.Lock()
	lost := cli.mh.flight[0]
	require.NoError(t, cli.mh.pm.SetPrimary(1)) // new DATA goes to path 1
	cli.mu.Unlock()
	require.Positive(t, lost, "DATA in flight to path 0")
	// One packet to path 1: its SACK gives path 0's chunks one miss
	// indication, short of a Fast Retransmit (§7.2.4).
	require.NoError(t, cli.WriteMsg(0, 0, msg(18)))
	cli.mu.Lock()
	both := cli.mh.flight[0] == lost && !cli.mh.t3[0].IsZero() && cli.mh.dataPackets[1] > 0
	cli.mu.Unlock()
	assert.True(t, both, "DATA sent to path 1 while path 0's is outstanding, its T3-rtx running")

	require.Eventually(t, func() bool { return delivered() == 19 }, 20*time.Second, time.Millisecond)
	// The last SACK may still be on its way once all is delivered.
	require.Eventually(t, func() bool {
		cli.mu.Lock()
		defer cli.mu.Unlock()
		return cli.mh.flight == [pathmgr.DefaultMaxPaths]int{}
	}, 10*time.Second, time.Millisecond, "nothing left in flight")
	st := cli.Stats()
	t.Logf("paths after path 0's T3-rtx: %+v, T3 expiries %d", st.Paths, st.T3Expiries-before.T3Expiries)
	assert.Equal(t, uint64(1), st.T3Expiries-before.T3Expiries, "one expiry: path 0's")
	assert.Equal(t, "potentially-failed", st.Paths[0].State, "the timeout is path 0's (RFC 7829)")
	assert.Equal(t, 1, st.Paths[0].Errors)
	assert.Less(t, st.Paths[0].SSThresh, before.Paths[0].SSThresh, "path 0's window reduced (§7.2.3)")
	assert.Equal(t, "active", st.Paths[1].State)
	assert.Zero(t, st.Paths[1].Errors, "path 1's error counter untouched")
	assert.Equal(t, before.Paths[1].SSThresh, st.Paths[1].SSThresh, "path 1's window not reduced")
	assert.GreaterOrEqual(t, st.Paths[1].Cwnd, before.Paths[1].Cwnd)
	assert.Greater(t, st.Paths[1].RTO, time.Duration(0))
	assert.Less(t, st.Paths[1].RTO, st.Paths[0].RTO, "only path 0's RTO backed off (§6.3.3 E2)")
	mu.Lock()
	for i, n := range got {
		assert.Equal(t, 1, n, "message %d delivered once", i)
	}
	mu.Unlock()
}

// starvation measures, until stop closes, how late a 5 ms ticker of this
// process ran at worst: the time a loaded host withheld every core from
// it, which a failover's pause includes and no protocol timer can shorten.
func starvation(stop <-chan struct{}) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		const tick = 5 * time.Millisecond
		tk := time.NewTicker(tick)
		defer tk.Stop()
		var worst time.Duration
		last := time.Now()
		for {
			select {
			case <-stop:
				out <- worst
				return
			case now := <-tk.C:
				worst = max(worst, now.Sub(last)-tick)
				last = now
			}
		}
	}()
	return out
}

// TestMultihoming_PLPMTUDPerPath_RFC9260_7_3: link 0 carries jumbo
// frames (MTU 9000), link 1 Ethernet's (1500). Each confirmed path's
// prober finds its own route's PLPMTU (RFC 8899 §6.2 per destination),
// packets are built for the smaller, the association PMTU of §7.3, and
// when link 0 fails mid-transfer the DATA retransmitted and sent on link
// 1 fits it: no IP fragment on either host, none sent with DF clear.
func TestMultihoming_PLPMTUDPerPath_RFC9260_7_3(t *testing.T) {
	d := dualPath(t)
	require.NoError(t, d.SetLinkMTU(0, 9000))
	cli, srv := mhPair(t, d, mhConfig(), d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	probed := func(a *Association) bool {
		ps := a.Stats().Paths
		return len(ps) == 2 && ps[0].PLPMTU == 9000 && ps[1].PLPMTU == 1500
	}
	require.Eventually(t, func() bool { return probed(cli) && probed(srv) }, 20*time.Second, 10*time.Millisecond,
		"each path probed to its own MTU: client %+v, server %+v", cli.Stats().Paths, srv.Stats().Paths)
	for _, a := range []*Association{cli, srv} {
		st := a.Stats()
		assert.Equal(t, 1500-28, st.MaxPacket, "packets fit the smaller path (§7.3)")
		assert.Equal(t, 1500, st.PLPMTUD.PLPMTU)
		assert.Equal(t, "search-complete", st.PLPMTUD.State)
	}
	frags, err := d.Fragments()
	require.NoError(t, err)

	const perStream = 150
	sink := newSink(16 * perStream)
	srv.Start(sink.take, func(error) {})
	wait := mhWriteAll(cli, perStream)
	require.Eventually(t, func() bool { return sink.count() >= sink.total/3 }, 30*time.Second, time.Millisecond)
	require.NoError(t, d.Cut(0))
	select {
	case <-sink.allDone:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d of %d messages delivered", sink.count(), sink.total)
	}
	require.NoError(t, wait())
	sink.mu.Lock()
	assert.Zero(t, sink.bad, "duplicate or corrupt messages")
	sink.mu.Unlock()
	cli.mu.Lock()
	assert.NotZero(t, cli.mh.dataPackets[1], "DATA went over link 1")
	cli.mu.Unlock()
	after, err := d.Fragments()
	require.NoError(t, err)
	assert.Equal(t, frags, after, "no IP fragmentation on the way to link 1")
	assert.Zero(t, cli.Stats().PLPMTUD.Fragmentable, "no packet sent with DF clear")
	t.Logf("client paths %+v, PLPMTUD %+v", cli.Stats().Paths, cli.Stats().PLPMTUD)
}

// tapRecord is one packet Config.Tap showed.
type tapRecord struct {
	sent          bool
	local, remote netip.Addr
}

// tapRecorder collects what Config.Tap shows.
type tapRecorder struct {
	mu   sync.Mutex
	seen map[tapRecord]int
}

func (r *tapRecorder) tap(sent bool, local, remote netip.AddrPort, _ []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[tapRecord]int{}
	}
	r.seen[tapRecord{sent, local.Addr(), remote.Addr()}]++
}

func (r *tapRecorder) records() map[tapRecord]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}

// TestMultihoming_TapLocalAddress_RFC9260_6_4: on the one wildcard
// socket of a multihomed association, Config.Tap (the pcap capture)
// shows each packet with the local address it really used: the address
// a received packet reached (IP_PKTINFO), the source address of the route
// a sent one took. Link i joins subnet i, so every packet to or from the
// peer's address on link i is on our address on link i, and none shows
// the wildcard address.
func TestMultihoming_TapLocalAddress_RFC9260_6_4(t *testing.T) {
	d := dualPath(t)
	var ct, st tapRecorder
	cli, srv := mhPair(t, d, mhConfig(), d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0",
		func(server bool, c *Config) {
			c.Tap = ct.tap
			if server {
				c.Tap = st.tap
			}
		})
	srv.Start(func(uint16, uint32, []byte) {}, func(error) {})
	for _, a := range []*Association{cli, srv} {
		require.Eventually(t, func() bool { return pathState(a, 0) == "active" && pathState(a, 1) == "active" },
			10*time.Second, 10*time.Millisecond, "both paths confirmed: %+v", a.Stats().Paths)
	}
	require.NoError(t, cli.WriteMsg(0, 0, []byte("over the primary")))

	link := map[string]int{d.AAddr[0]: 0, d.AAddr[1]: 1, d.BAddr[0]: 0, d.BAddr[1]: 1}
	for _, side := range []struct {
		name string
		r    *tapRecorder
	}{{"client", &ct}, {"server", &st}} {
		recs := side.r.records()
		require.NotEmpty(t, recs)
		for dir := range 2 {
			for i := range 2 {
				found := false
				for rec := range recs {
					found = found || (rec.sent == (dir == 0) && link[rec.remote.String()] == i)
				}
				assert.True(t, found, "%s: no packet %s on link %d: %v", side.name, []string{"sent", "received"}[dir], i, recs)
			}
		}
		for rec, n := range recs {
			li, lok := link[rec.local.String()]
			ri, rok := link[rec.remote.String()]
			assert.True(t, lok && rok && li == ri, "%s: %d packets (sent %v) shown between %v and %v", side.name, n, rec.sent, rec.local, rec.remote)
		}
	}
}

// TestMultihoming_UnboundLocalAddress_RFC9260_1_5_1: a multihomed
// listener's socket is bound to the wildcard address, so the kernel also
// hands it packets sent to this host's other addresses (here its
// loopback). Those are not the endpoint's: an INIT sent there is dropped
// and counted, unanswered, while the listener serves its own addresses.
func TestMultihoming_UnboundLocalAddress_RFC9260_1_5_1(t *testing.T) {
	d := dualPath(t)
	l, port := mhListen(t, d, d.AAddr[0]+"/"+d.AAddr[1], mhConfig())

	in := wire.Init{InitiateTag: 0x1234, ARwnd: 1 << 16, OutboundStreams: 4, InboundStreams: 4, InitialTSN: 1}
	in.Params.Adaptation, in.Params.HasAdaptation = wire.AdaptationDDP, true
	pkt := wire.AppendHeader(nil, wire.Header{SrcPort: 6000, DstPort: defaultPort})
	pkt = in.Append(pkt)
	wire.SetChecksum(pkt)
	initAck := func(to string) bool {
		var got bool
		require.NoError(t, netns.In(d.A, func() error {
			uc, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(to), Port: port})
			if err != nil {
				return err
			}
			defer uc.Close()
			if _, err := uc.Write(pkt); err != nil {
				return err
			}
			_ = uc.SetReadDeadline(time.Now().Add(time.Second))
			b := make([]byte, 2048)
			n, err := uc.Read(b)
			if err == nil {
				p, perr := wire.ParsePacket(b[:n])
				got = perr == nil && len(p.ChunkBytes()) > 0 && wire.ChunkType(p.ChunkBytes()[0]) == wire.ChunkInitAck
			}
			return nil
		}))
		return got
	}
	assert.False(t, initAck("127.0.0.1"), "an INIT to an address the listener was not given is not answered")
	require.Eventually(t, func() bool { return l.Stats().Unbound == 1 }, 5*time.Second, time.Millisecond)
	assert.True(t, initAck(d.AAddr[1]), "an INIT to one of its addresses is answered")
	assert.Equal(t, uint64(1), l.Stats().Unbound)
}

// TestMultihoming_PortPerAddress_RFC6951_5_4: over UDP the peer's
// encapsulation port belongs to each of its addresses (RFC 6951 §5.4):
// here its second address answers from another port than the first (as a
// NAT that rebinds one path would). A packet from that address and port
// carrying the association's Verification Tag moves the path to the port,
// where its HEARTBEAT is answered and the path confirmed; a packet from a
// third port without the tag moves nothing.
func TestMultihoming_PortPerAddress_RFC6951_5_4(t *testing.T) {
	bind := func(ip string) *net.UDPConn {
		pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
		require.NoError(t, err)
		t.Cleanup(func() { _ = pc.Close() })
		return pc
	}
	first := &rawPeer{t: t, pc: bind("127.0.0.5"), buf: make([]byte, 1<<16), port: defaultPort}
	second := &rawPeer{t: t, pc: bind("127.0.0.6"), buf: make([]byte, 1<<16), port: defaultPort}
	stray := &rawPeer{t: t, pc: bind("127.0.0.6"), buf: make([]byte, 1<<16), port: defaultPort}
	port := first.pc.LocalAddr().(*net.UDPAddr).Port
	require.NotEqual(t, port, second.pc.LocalAddr().(*net.UDPAddr).Port)

	cfg := mhConfig()
	a, tag, _ := dialRawAt(t, first, fmt.Sprintf("127.0.0.5/127.0.0.6:%d", port), &cfg, func(uint16, uint32, []byte) {})
	second.to, stray.to = first.to, first.to

	secondPath := func() PathStats {
		_, p := pathOf(a, "127.0.0.6")
		return p
	}
	require.Equal(t, uint16(port), secondPath().Addr.Port(), "listed at the first address's port")

	stray.send(tag^1, (&wire.Heartbeat{Info: []byte("no tag")}).Append(nil))
	heartbeatRoundTrip(t, first, tag) // the stray packet was read before
	assert.Equal(t, uint16(port), secondPath().Addr.Port(), "a packet without the tag moves no path")

	second.send(tag, (&wire.Heartbeat{Info: []byte("from the second port")}).Append(nil))
	_, c, ok := second.recvChunk(wire.ChunkHeartbeat, 5*time.Second)
	require.True(t, ok, "a HEARTBEAT to the path's new port: %+v", a.Stats().Paths)
	hb, err := wire.ParseHeartbeat(c)
	require.NoError(t, err)
	second.send(tag, (&wire.Heartbeat{Ack: true, Info: hb.Info}).Append(nil))
	require.Eventually(t, func() bool { return secondPath().State == "active" }, 5*time.Second, time.Millisecond,
		"confirmed at its new port: %+v", a.Stats().Paths)
	assert.Equal(t, uint16(second.pc.LocalAddr().(*net.UDPAddr).Port), secondPath().Addr.Port())
	_, p := pathOf(a, "127.0.0.5")
	assert.Equal(t, uint16(port), p.Addr.Port(), "the first address keeps its port")
}

// TestMultihoming_RunsPerDestination: a multihomed association sends from
// its one wildcard socket in runs, as a single-address one does from its
// connected socket: each transmission's packets to its destination go
// with one system call per run (UDP_SEGMENT), before and after DATA moves
// to the other path, and the steady transfer allocates nothing per
// message.
func TestMultihoming_RunsPerDestination(t *testing.T) {
	d := dualPath(t)
	cli, srv := mhPair(t, d, mhConfig(), d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0")
	require.Eventually(t, func() bool { return pathState(cli, 1) == "active" }, 10*time.Second, 10*time.Millisecond)
	const perRound = 16 * 40
	var got atomic.Int64
	round := make(chan struct{}, 4)
	srv.Start(func(uint16, uint32, []byte) {
		if got.Add(1)%perRound == 0 {
			round <- struct{}{}
		}
	}, func(error) {})
	msg := make([]byte, 64<<10)
	send := func() {
		t.Helper()
		for i := range perRound {
			require.NoError(t, cli.WriteMsg(uint16(i%16), 0, msg))
		}
		select {
		case <-round:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d messages arrived", got.Load())
		}
	}
	send() // warm: pools, windows (the buffer pools grow with the window)
	st := cli.Stats()
	// The fewest allocations of three rounds: a pooled buffer more when
	// the window reaches a new high, or after a collection emptied the
	// pools, is not a cost per message; one per message shows in every
	// round.
	perMsg := make([]float64, 3)
	for i := range perMsg {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		send()
		runtime.ReadMemStats(&after)
		perMsg[i] = float64(after.Mallocs-before.Mallocs) / perRound
	}
	mid := cli.Stats()
	t.Logf("link 0: %d packets in %d multi-packet sends; allocations per 64 KiB message %.3f", mid.PacketsSent-st.PacketsSent,
		mid.OffloadSends-st.OffloadSends, perMsg)
	assert.Greater(t, mid.OffloadSends, st.OffloadSends, "runs on link 0")
	assert.Greater(t, (mid.PacketsSent-st.PacketsSent)/max(mid.OffloadSends-st.OffloadSends, 1), uint64(4),
		"several packets per system call")
	assert.Less(t, slices.Min(perMsg), mhAllocBound, "allocations per message")

	require.NoError(t, d.Cut(0))
	send()
	end := cli.Stats()
	_, p1 := pathOf(cli, d.AAddr[1])
	t.Logf("after the cut: %d packets in %d multi-packet sends; paths %+v", end.PacketsSent-mid.PacketsSent,
		end.OffloadSends-mid.OffloadSends, end.Paths)
	assert.Greater(t, end.OffloadSends, mid.OffloadSends, "runs on link 1")
	assert.Greater(t, p1.OctetsSent, uint64(perRound)*uint64(len(msg))/2, "the DATA went over link 1")
}
