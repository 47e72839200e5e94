//go:build linux

package nstest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/netns"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

var linkMTUs = []int{1280, 1500, 9000}

// TestLinkMTU_PionSCTP: on links of MTU 1280, 1500 and 9000 the tracked
// path MTU of SCTP over UDP converges to the link (capped at pion's 8192-
// octet packets), MULPDU is RFC 5043 §9's value for it, every DDP segment
// of an RDMA Write is at most MULPDU and full segments are exactly MULPDU,
// and IP fragments nothing.
func TestLinkMTU_PionSCTP(t *testing.T) {
	for _, mtu := range linkMTUs {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			topo := topology(t, mtu)
			p, tr := pionPair(t, topo, dplpmtud.ConnConfig{})
			want := min(mtu, dplpmtud.PionMaxPacket+pmtu.UDPHeaderLen+pmtu.IPv4HeaderLen)
			d := waitPMTU(t, tr, want, 10*time.Second)
			t.Logf("path MTU %d found in %v", want, d)
			mul := pmtu.SCTPMULPDU(want, false, true)
			require.Equal(t, mul, p.mulpdu(), "RFC 5043 §9 MULPDU")
			require.Equal(t, pmtu.SCTPMaxMessage(want, false, true), tr.MaxMessage())

			before, err := topo.Fragments()
			require.NoError(t, err)
			data := make([]byte, 4<<20)
			fill(data, byte(mtu))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			require.NoError(t, p.write(ctx, data))
			require.True(t, bytes.Equal(data, p.target.Bytes()[:len(data)]), "data intact")
			after, err := topo.Fragments()
			require.NoError(t, err)
			assert.Equal(t, before.Total(), after.Total(), "IP fragments: before %+v after %+v", before, after)
			sizes := p.rec.sizes(0)
			require.NotEmpty(t, sizes)
			assert.Equal(t, mul, maxOf(sizes), "full segments fill MULPDU")
			st, _ := tr.PathMTU()
			t.Logf("MTU %d: MULPDU %d, %d segments, stats %+v", mtu, mul, len(sizes), st)
		})
	}
}

// TestLinkMTU_MPA: MPA over TCP on links of MTU 1280, 1500 and 9000: the
// MSS the kernel uses (TCP_MAXSEG) matches the link, MULPDU is RFC 5044
// §4.5's value for it, segments fill it, IP fragments nothing.
func TestLinkMTU_MPA(t *testing.T) {
	for _, mtu := range linkMTUs {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			topo := topology(t, mtu)
			p, c := mpaPair(t, topo)
			mss := tcpMSS(t, c)
			// Timestamps (12 octets of options) are on by default.
			require.Contains(t, []int{pmtu.TCPMSS(mtu, false, 0), pmtu.TCPMSS(mtu, false, 12)}, mss)
			mul := iwarpwire.MPAMULPDU(mss, false)
			require.Equal(t, iwarpwire.MPAMULPDU(mss, false), mul)
			require.Equal(t, mul, p.mulpdu(), "RFC 5044 §4.5 MULPDU")

			before, err := topo.Fragments()
			require.NoError(t, err)
			data := make([]byte, 4<<20)
			fill(data, byte(mtu))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			require.NoError(t, p.write(ctx, data))
			require.True(t, bytes.Equal(data, p.target.Bytes()[:len(data)]), "data intact")
			after, err := topo.Fragments()
			require.NoError(t, err)
			assert.Equal(t, before.Total(), after.Total(), "IP fragments")
			assert.Equal(t, mul, maxOf(p.rec.sizes(0)))
			t.Logf("MTU %d: MSS %d MULPDU %d", mtu, mss, mul)
		})
	}
}

// dropMidWrite starts a long RDMA Write, lowers link B (router and h2
// ends) from 9000 to 1280 once count segments were sent, and waits for the
// Write. It returns when the drop happened.
func dropMidWrite(t *testing.T, topo *netns.Topology, p *pair, data []byte, count int) time.Time {
	t.Helper()
	return dropLinkMidWrite(t, topo, p, data, count, [2]string{topo.R, "b1"}, [2]string{topo.H2, "b0"})
}

// dropLinkMidWrite is dropMidWrite for the link whose two ends are given.
func dropLinkMidWrite(t *testing.T, topo *netns.Topology, p *pair, data []byte, count int, end1, end2 [2]string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- p.write(ctx, data) }()
	require.Eventually(t, func() bool { return p.rec.count() >= count }, 30*time.Second, time.Millisecond)
	p.rec.setPhase(1)
	t0 := time.Now()
	require.NoError(t, netns.SetMTU(end1[0], end1[1], 1280))
	require.NoError(t, netns.SetMTU(end2[0], end2[1], 1280))
	require.NoError(t, <-errc, "the Write completes across the MTU drop")
	t.Logf("write of %d MiB finished %v after the drop", len(data)>>20, time.Since(t0))
	require.True(t, bytes.Equal(data, p.target.Bytes()[:len(data)]), "data intact")
	return t0
}

// TestMTUDrop_PionSCTP: the router's second link falls from 9000 to 1280
// in the middle of a long RDMA Write over SCTP over UDP. The ICMP
// "fragmentation needed" lowers the tracked path MTU, the Write completes
// intact, DDP segments shrink to the 1280 MULPDU, the router fragments
// nothing, and after the transition nothing is fragmented anywhere.
func TestMTUDrop_PionSCTP(t *testing.T) {
	topo := topology(t, 9000)
	p, tr := pionPair(t, topo, dplpmtud.ConnConfig{})
	big := dplpmtud.PionMaxPacket + pmtu.UDPHeaderLen + pmtu.IPv4HeaderLen
	waitPMTU(t, tr, big, 10*time.Second)
	before, err := topo.Fragments()
	require.NoError(t, err)

	data := make([]byte, 32<<20)
	fill(data, 1)
	t0 := dropMidWrite(t, topo, p, data, 600)
	st, _ := tr.PathMTU()
	require.Equal(t, 1280, st.PMTU)
	require.GreaterOrEqual(t, st.TooBig, uint64(1), "EMSGSIZE/ICMP seen")
	t.Logf("PMTU 1280 applied %v after the drop; stats %+v", st.LastChange.Sub(t0), st)

	small := pmtu.SCTPMULPDU(1280, false, true)
	assert.Equal(t, pmtu.SCTPMULPDU(big, false, true), maxOf(p.rec.sizes(0)))
	after := p.rec.sizes(1)
	require.NotEmpty(t, after)
	tail := after[max(0, len(after)-200):]
	assert.Equal(t, small, maxOf(tail), "segments shrink to the 1280 MULPDU")
	assert.Equal(t, small, p.mulpdu())

	mid, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, before.Creates[topo.R], mid.Creates[topo.R], "the router fragments nothing")
	t.Logf("fragments during the transition: h1 created %d (DATA chunks already in flight, sent DF-clear: %d), h2 reassembled %d",
		mid.Creates[topo.H1]-before.Creates[topo.H1], st.Fragmentable, mid.Reasm[topo.H2]-before.Reasm[topo.H2])

	// After the transition: nothing is fragmented at all.
	p.rec.setPhase(2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fill(data[:8<<20], 2)
	require.NoError(t, p.write(ctx, data[:8<<20]))
	require.True(t, bytes.Equal(data[:8<<20], p.target.Bytes()[:8<<20]))
	end, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, mid.Total(), end.Total(), "no fragments after the transition")
	assert.Equal(t, small, maxOf(p.rec.sizes(2)))
}

// TestMTUDrop_MPA: the same drop under MPA over TCP: TCP learns the path
// MTU from the ICMP and re-segments, MPA's MULPDU follows TCP_MAXSEG, and
// IP fragments nothing at all.
func TestMTUDrop_MPA(t *testing.T) {
	topo := topology(t, 9000)
	p, c := mpaPair(t, topo)
	bigMSS := tcpMSS(t, c)
	before, err := topo.Fragments()
	require.NoError(t, err)
	data := make([]byte, 32<<20)
	fill(data, 3)
	dropMidWrite(t, topo, p, data, 600)
	mss := tcpMSS(t, c)
	require.Less(t, mss, bigMSS)
	require.LessOrEqual(t, mss, pmtu.TCPMSS(1280, false, 0))
	small := iwarpwire.MPAMULPDU(mss, false)
	assert.Equal(t, iwarpwire.MPAMULPDU(bigMSS, false), maxOf(p.rec.sizes(0)))
	after := p.rec.sizes(1)
	require.NotEmpty(t, after)
	assert.Equal(t, small, maxOf(after[max(0, len(after)-200):]), "segments shrink to the new MULPDU")
	end, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, before.Total(), end.Total(), "IP fragments nothing under TCP")
	t.Logf("MSS %d -> %d, MULPDU %d -> %d", bigMSS, mss, iwarpwire.MPAMULPDU(bigMSS, false), small)
}

// TestBlackHole_PionSCTP: link B's far end falls to 1280 while the router
// keeps 9000, so large packets vanish without any ICMP (the veth drops
// what exceeds the receiving end's MTU). RFC 8899 probing still converges
// in bounded time: the PLPMTU confirmation fails MAX_PROBES times, the
// path falls to BASE_PLPMTU, and the search finds 1280. An RDMA Write
// then runs with 1280-sized segments and no fragments.
func TestBlackHole_PionSCTP(t *testing.T) {
	topo := topology(t, 9000)
	pcfg := dplpmtud.ConnConfig{Prober: dplpmtud.ProberConfig{ConfirmInterval: 2 * time.Second}}
	p, tr := pionPair(t, topo, pcfg)
	big := dplpmtud.PionMaxPacket + pmtu.UDPHeaderLen + pmtu.IPv4HeaderLen
	waitPMTU(t, tr, big, 10*time.Second)

	require.NoError(t, netns.SetMTU(topo.H2, "b0", 1280))
	t0 := time.Now()
	var tBase time.Duration
	require.Eventually(t, func() bool {
		s, _ := tr.PathMTU()
		if s.PMTU <= 1280 && tBase == 0 {
			tBase = time.Since(t0)
		}
		return s.PMTU == 1280 && tr.PMTUConn().ProberState() == dplpmtud.StateSearchComplete
	}, 20*time.Second, 5*time.Millisecond)
	tFinal := time.Since(t0)
	st := tr.PMTUConn().Stats()
	t.Logf("black hole: safe PLPMTU after %v, 1280 confirmed and search complete after %v; stats %+v", tBase, tFinal, st)
	// Bound: ConfirmInterval + MAX_PROBES·PROBE_TIMER to detect, then the
	// base and 1280 probes (RTTs) and MAX_PROBES·PROBE_TIMER for the
	// failing 1400 probe.
	bound := 2*time.Second + 6*dplpmtud.DefaultProbeTimeout + 3*time.Second
	assert.Less(t, tFinal, bound)
	assert.GreaterOrEqual(t, st.BlackHoles, uint64(1))

	before, err := topo.Fragments()
	require.NoError(t, err)
	p.rec.setPhase(1)
	data := make([]byte, 8<<20)
	fill(data, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, p.write(ctx, data))
	require.True(t, bytes.Equal(data, p.target.Bytes()[:len(data)]))
	assert.Equal(t, pmtu.SCTPMULPDU(1280, false, true), maxOf(p.rec.sizes(1)))
	after, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, before.Total(), after.Total())
}

// TestIPv6_PionSCTP: over IPv6 the path MTU comes from IPV6_MTU and ICMPv6
// Packet Too Big (RFC 8201): on a 9000 path pion's largest packet (8192 +
// 8 + 40 = 8240) is found, and when link B drops to 1280 in the middle of
// an RDMA Write the path follows, segments shrink to the IPv6 MULPDU (1170)
// and the router fragments nothing.
func TestIPv6_PionSCTP(t *testing.T) {
	topo := topology(t, 9000)
	p, tr := pionPairAt(t, topo, topo.H2Addr6, dplpmtud.ConnConfig{})
	require.True(t, tr.PMTUConn().IPv6())
	big := dplpmtud.PionMaxPacket + pmtu.UDPHeaderLen + pmtu.IPv6HeaderLen
	waitPMTU(t, tr, big, 10*time.Second)
	assert.Equal(t, pmtu.SCTPMULPDU(big, true, true), p.mulpdu())
	before, err := topo.Fragments()
	require.NoError(t, err)
	data := make([]byte, 16<<20)
	fill(data, 6)
	dropMidWrite(t, topo, p, data, 300)
	st, _ := tr.PathMTU()
	assert.Equal(t, 1280, st.PMTU)
	small := pmtu.SCTPMULPDU(1280, true, true)
	assert.Equal(t, 1170, small)
	after := p.rec.sizes(1)
	require.NotEmpty(t, after)
	assert.Equal(t, small, maxOf(after[max(0, len(after)-200):]))
	end, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, before.Creates[topo.R], end.Creates[topo.R], "the router fragments nothing (IPv6 routers never do)")
	t.Logf("IPv6: stats %+v; h1 fragments %d", st, end.Creates[topo.H1]-before.Creates[topo.H1])
}

// TestMTUDrop_PionSCTP_Passive: the passive side (ListenPionPMTU, one
// unconnected socket shared by its associations) writes to the active
// side; link A (router and h1 ends) drops from 9000 to 1280 mid-Write.
// The router's ICMP reaches h2's shared socket, the helper-socket query
// gives the new path MTU, the Write completes intact, segments shrink,
// the router fragments nothing, and afterwards nothing is fragmented.
func TestMTUDrop_PionSCTP_Passive(t *testing.T) {
	topo := topology(t, 9000)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var pl backend.Listener
	require.NoError(t, netns.In(topo.H2, func() error {
		var err error
		pl, err = pion.Stack(pion.Config{PathMTU: &dplpmtud.ConnConfig{}}).Listen(net.JoinHostPort(topo.H2Addr, "0"))
		return err
	}))
	t.Cleanup(func() { _ = pl.Close() })
	var ct pionTransport
	require.NoError(t, netns.In(topo.H1, func() error {
		var err error
		ct, err = dialPionPMTU(ctx, pl.Addr().String(), dplpmtud.ConnConfig{})
		return err
	}))
	ca := sctpllp.NewAssociation(ct, sctpllp.Config{})
	t.Cleanup(func() { _ = ca.Abort() })
	acc, err := pl.Accept(ctx)
	require.NoError(t, err)
	st := acc.(pionTransport)
	sa := sctpllp.NewAssociation(st, sctpllp.Config{})
	t.Cleanup(func() { _ = sa.Abort() })
	require.NotNil(t, st.PMTUConn())

	type res struct {
		s   sctpllp.Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := ca.Open(ctx, 1, sctpllp.OpenRequest{})
		ch <- res{s, err}
	}()
	in, err := sa.Accept(ctx)
	require.NoError(t, err)
	ss, err := in.Accept(sctpllp.AcceptParams{})
	require.NoError(t, err)
	r := <-ch
	require.NoError(t, r.err)
	// The passive side writes.
	p := newPair(t, ss, r.s, ss.MULPDU)

	big := dplpmtud.PionMaxPacket + pmtu.UDPHeaderLen + pmtu.IPv4HeaderLen
	waitPMTU(t, st, big, 10*time.Second)
	assert.Equal(t, pmtu.SCTPMULPDU(big, false, true), p.mulpdu())
	before, err := topo.Fragments()
	require.NoError(t, err)
	data := make([]byte, 16<<20)
	fill(data, 7)
	dropLinkMidWrite(t, topo, p, data, 300, [2]string{topo.R, "a1"}, [2]string{topo.H1, "a0"})
	s, _ := st.PathMTU()
	assert.Equal(t, 1280, s.PMTU)
	assert.GreaterOrEqual(t, s.TooBig, uint64(1))
	small := pmtu.SCTPMULPDU(1280, false, true)
	after := p.rec.sizes(1)
	require.NotEmpty(t, after)
	assert.Equal(t, small, maxOf(after[max(0, len(after)-200):]))
	mid, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, before.Creates[topo.R], mid.Creates[topo.R], "the router fragments nothing")
	t.Logf("passive side: stats %+v; h2 fragments during the transition %d", s, mid.Creates[topo.H2]-before.Creates[topo.H2])

	p.rec.setPhase(2)
	fill(data[:4<<20], 8)
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	require.NoError(t, p.write(wctx, data[:4<<20]))
	require.True(t, bytes.Equal(data[:4<<20], p.target.Bytes()[:4<<20]))
	end, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, mid.Total(), end.Total(), "no fragments after the transition")
}

// TestLinkMTU_NativeSCTP: the dialer of the project's own SCTP takes its
// packet size from the route to the peer (IP_MTU of its connected socket)
// on links of MTU 1280, 1500 and 9000, and 4 MiB of messages cross
// without one IP fragment (RFC 5043 §9: no fragmentation below DDP). A
// listener's socket is not connected: without native.Config.MTU it asks
// the route toward each new peer the same way (a probe socket connected
// to the peer), so that a 1280 link does not fragment its packets and a
// 9000 link carries jumbo ones.
func TestLinkMTU_NativeSCTP(t *testing.T) {
	for _, mtu := range linkMTUs {
		t.Run(fmt.Sprint(mtu), func(t *testing.T) {
			topo := topology(t, mtu)
			cl, sv := nativePair(t, topo)
			// RFC 8899: both ends start at BASE_PLPMTU and probe the
			// route's MTU first (MaxFirst), two round trips.
			want := (mtu - pmtu.IPv4HeaderLen - pmtu.UDPHeaderLen - 12 - 16) &^ 3
			// The state is reached asynchronously (the probes' acks): wait
			// for it too, never read it at the instant MaxMessage moves.
			require.Eventually(t, func() bool {
				return cl.MaxMessage() == want && sv.MaxMessage() == want &&
					cl.PLPMTUD().State == "search-complete" && sv.PLPMTUD().State == "search-complete"
			}, 20*time.Second, time.Millisecond, "client %d %+v, listener %d %+v, want %d",
				cl.MaxMessage(), cl.PLPMTUD(), sv.MaxMessage(), sv.PLPMTUD(), want)
			for _, st := range []sctp.PLPMTUDStats{cl.PLPMTUD(), sv.PLPMTUD()} {
				assert.Equal(t, "search-complete", st.State)
				assert.Equal(t, mtu, st.PLPMTU)
				assert.Zero(t, st.ProbesLost, "the route's MTU is the path's: no probe lost")
			}

			before, err := topo.Fragments()
			require.NoError(t, err)
			var got atomic.Int64
			sv.Start(func(_ uint16, _ uint32, b []byte) { got.Add(int64(len(b))) }, func(error) {})
			cl.Start(func(uint16, uint32, []byte) {}, func(error) {})
			msg := make([]byte, cl.MaxMessage())
			n := (4 << 20) / len(msg)
			for range n {
				require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, msg))
			}
			require.Eventually(t, func() bool { return got.Load() == int64(n*len(msg)) }, 20*time.Second, 10*time.Millisecond)
			after, err := topo.Fragments()
			require.NoError(t, err)
			assert.Equal(t, before.Total(), after.Total(), "IP fragments: before %+v after %+v", before, after)
		})
	}
}

// TestBlackHole_NativeSCTP: link B's far end is 1280 while every route
// says 9000, so packets above 1280 vanish without an ICMP (the veth drops
// what exceeds the receiving end's MTU) from the first one on. Without
// RFC 8899 probing the association would send 9000-octet packets into
// the hole until it died; with it both ends start at BASE_PLPMTU, the
// probe of the route's 9000 is lost once (MaxFirst's single try), the
// table walk confirms 1280 and loses 1400 MAX_PROBES times, and 8 MiB
// then cross in 1280-octet packets, intact, with no IP fragment.
func TestBlackHole_NativeSCTP(t *testing.T) {
	topo := topology(t, 9000)
	require.NoError(t, netns.SetMTU(topo.H2, "b0", 1280))
	cl, sv := nativePair(t, topo)
	got, bad := startChecking(cl, sv)

	// Data flows from the start, in BASE_PLPMTU packets while probing
	// (nothing larger before a probe confirms it: the first to be
	// confirmed, 1280, needs the 9000 probe's PROBE_TIMER first).
	base := (dplpmtud.DefaultBasePLPMTU - pmtu.IPv4HeaderLen - pmtu.UDPHeaderLen - 12 - 16) &^ 3
	assert.Contains(t, []int{base, (1280 - pmtu.IPv4HeaderLen - pmtu.UDPHeaderLen - 12 - 16) &^ 3}, cl.MaxMessage())
	t0 := time.Now()
	msg := make([]byte, base)
	for i := range msg {
		msg[i] = byte(i)
	}
	for range 100 {
		require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, msg))
	}
	require.Eventually(t, func() bool { return got.Load() == int64(100*len(msg)) }, 5*time.Second, time.Millisecond,
		"DATA in BASE_PLPMTU packets crosses while the search runs")

	want := (1280 - pmtu.IPv4HeaderLen - pmtu.UDPHeaderLen - 12 - 16) &^ 3
	require.Eventually(t, func() bool {
		return cl.MaxMessage() == want && cl.PLPMTUD().State == "search-complete"
	}, 20*time.Second, 5*time.Millisecond)
	st := cl.PLPMTUD()
	t.Logf("black hole from the start: 1280 found in %v; client %+v; listener %+v", time.Since(t0), st, sv.PLPMTUD())
	// Bound: one PROBE_TIMER for 9000, MAX_PROBES of them for 1400, and
	// the round trips of the others.
	assert.Less(t, time.Since(t0), (1+dplpmtud.DefaultMaxProbes)*dplpmtud.DefaultProbeTimeout+3*time.Second)
	assert.Equal(t, 1280, st.PLPMTU)
	assert.Equal(t, uint64(1+dplpmtud.DefaultMaxProbes), st.ProbesLost, "9000 once, 1400 MAX_PROBES times")

	before, err := topo.Fragments()
	require.NoError(t, err)
	got.Store(0)
	msg = make([]byte, cl.MaxMessage())
	for i := range msg {
		msg[i] = byte(i)
	}
	n := (8 << 20) / len(msg)
	for range n {
		require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, msg))
	}
	require.Eventually(t, func() bool { return got.Load() == int64(n*len(msg)) }, 30*time.Second, 10*time.Millisecond)
	assert.Zero(t, bad.Load(), "payload intact")
	assert.Equal(t, 1280-pmtu.IPv4HeaderLen-pmtu.UDPHeaderLen, cl.Stats().MaxPacket)
	assert.Zero(t, cl.PLPMTUD().Fragmentable, "no packet above the PLPMTU: nothing was built larger than the hole")
	after, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, before.Total(), after.Total(), "IP fragments")
}

// TestMTUDrop_NativeSCTP: the router's second link falls from 9000 to 1280
// while 32 MiB cross in 9000-sized packets. The router's ICMP
// "fragmentation needed" teaches the client's kernel the new path MTU, the
// next full-sized send fails with EMSGSIZE (DF is set) and the PLPMTU
// drops to the kernel's 1280 at once (RFC 8899 §4.6.2); chunks built for
// 9000 before the drop go out with DF clear (they cannot be split), new
// ones fit 1280. Everything arrives intact, and once the old chunks are
// through nothing is fragmented.
func TestMTUDrop_NativeSCTP(t *testing.T) {
	topo := topology(t, 9000)
	cl, sv := nativePair(t, topo)
	got, bad := startChecking(cl, sv)
	big := (9000 - pmtu.IPv4HeaderLen - pmtu.UDPHeaderLen - 12 - 16) &^ 3
	require.Eventually(t, func() bool { return cl.MaxMessage() == big }, 5*time.Second, time.Millisecond)

	total := int64(0)
	var dropped time.Time
	buf := make([]byte, big)
	for i := range buf {
		buf[i] = byte(i)
	}
	for total < 32<<20 {
		m := cl.MaxMessage() // as DDP does: the MULPDU of the moment
		require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, buf[:m]))
		total += int64(m)
		if dropped.IsZero() && total >= 8<<20 {
			require.NoError(t, netns.SetMTU(topo.R, "b1", 1280))
			require.NoError(t, netns.SetMTU(topo.H2, "b0", 1280))
			dropped = time.Now()
		}
	}
	require.Eventually(t, func() bool { return got.Load() == total }, 30*time.Second, 10*time.Millisecond,
		"%d of %d octets", got.Load(), total)
	small := (1280 - pmtu.IPv4HeaderLen - pmtu.UDPHeaderLen - 12 - 16) &^ 3
	assert.Equal(t, small, cl.MaxMessage())
	st := cl.PLPMTUD()
	t.Logf("drop to 1280: %v after it all arrived; %+v; stats %+v", time.Since(dropped), st, cl.Stats())
	assert.Equal(t, 1280, st.PLPMTU)
	assert.Positive(t, st.Fragmentable, "chunks built for 9000 went with DF clear")
	assert.GreaterOrEqual(t, st.TooBig, uint64(1), "EMSGSIZE from the kernel's new path MTU")
	assert.Zero(t, bad.Load(), "payload intact")

	// After the transition: nothing fragmented anywhere.
	before, err := topo.Fragments()
	require.NoError(t, err)
	got.Store(0)
	n := (4 << 20) / small
	for range n {
		require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, buf[:small]))
	}
	require.Eventually(t, func() bool { return got.Load() == int64(n*small) }, 30*time.Second, 10*time.Millisecond)
	after, err := topo.Fragments()
	require.NoError(t, err)
	assert.Equal(t, before.Total(), after.Total(), "IP fragments after the transition")
}

// TestBlackHoleMidTransfer_NativeSCTP (RFC 8899 §4.3, §5.2): the router's
// second link falls from 9000 to 1280 while 32 MiB cross in 9000-octet
// packets, and the sender's host ignores the router's ICMP
// "fragmentation needed" (net.ipv4.ip_no_pmtu_disc = 2: a black hole as a
// filtering firewall makes one). Nothing but loss tells the sender: the
// T3-rtx expiry makes the prober confirm the PLPMTU at once, MAX_PROBES
// lost confirmations fall back to BASE_PLPMTU (a black hole), the search
// finds 1280, and the chunks built for 9000 go with DF clear, which the
// router fragments. Everything arrives intact, and the fall back is
// counted and bounded: RTO + MAX_PROBES·PROBE_TIMER + round trips.
func TestBlackHoleMidTransfer_NativeSCTP(t *testing.T) {
	topo := topology(t, 9000)
	require.NoError(t, topo.Sysctl(topo.H1, "net/ipv4/ip_no_pmtu_disc", "2"))
	cl, sv := nativePair(t, topo)
	got, bad := startChecking(cl, sv)
	big := (9000 - pmtu.IPv4HeaderLen - pmtu.UDPHeaderLen - 12 - 16) &^ 3
	require.Eventually(t, func() bool { return cl.MaxMessage() == big && cl.PLPMTUD().State == "search-complete" },
		20*time.Second, time.Millisecond, "%+v", cl.PLPMTUD())

	total := int64(0)
	var dropped time.Time
	fell, resumed := make(chan time.Duration, 1), make(chan time.Duration, 1)
	buf := make([]byte, big)
	for i := range buf {
		buf[i] = byte(i)
	}
	for total < 32<<20 {
		m := cl.MaxMessage() // as DDP does: the MULPDU of the moment
		require.NoError(t, cl.WriteMsg(1, backend.PPIDSegment, buf[:m]))
		total += int64(m)
		if dropped.IsZero() && total >= 8<<20 {
			require.NoError(t, netns.SetMTU(topo.R, "b1", 1280))
			require.NoError(t, netns.SetMTU(topo.H2, "b0", 1280))
			dropped = time.Now()
			go func(dropped time.Time) { // the writes below block meanwhile
				for cl.PLPMTUD().BlackHoles == 0 && time.Since(dropped) < time.Minute {
					time.Sleep(5 * time.Millisecond)
				}
				fell <- time.Since(dropped)
				// How long after the fall back the receiver gets 1 MiB more.
				at, from := time.Now(), got.Load()
				for got.Load() < from+1<<20 && time.Since(at) < time.Minute {
					time.Sleep(5 * time.Millisecond)
				}
				resumed <- time.Since(at)
			}(dropped)
		}
	}
	small := (1280 - pmtu.IPv4HeaderLen - pmtu.UDPHeaderLen - 12 - 16) &^ 3
	fellBack := <-fell
	require.Eventually(t, func() bool { return got.Load() == total }, 60*time.Second, 5*time.Millisecond,
		"%d of %d octets; %+v", got.Load(), total, cl.PLPMTUD())
	arrived := time.Since(dropped)
	resumedAfter := <-resumed
	require.Eventually(t, func() bool { return cl.MaxMessage() == small && cl.PLPMTUD().State == "search-complete" },
		20*time.Second, 5*time.Millisecond, "%+v", cl.PLPMTUD())
	st := cl.PLPMTUD()
	t.Logf("black hole mid-transfer: fell back %v after the drop, 1 MiB more arrived %v after that, all %v after the drop; %+v; stats %+v",
		fellBack, resumedAfter, arrived, st, cl.Stats())
	// RTO (200 ms, DDP's RTO.Min) to the first T3-rtx, then MAX_PROBES
	// lost confirmations of PROBE_TIMER (1 s) each; generous for a
	// loaded host.
	assert.Less(t, fellBack, 10*time.Second, "within seconds: RTO + MAX_PROBES·PROBE_TIMER")
	// Not the whole transfer's time (the host's load sets that): the
	// chunks in flight go again at the fall back, not after T3-rtx's
	// backoff, so data flows again at once.
	assert.Less(t, resumedAfter, 10*time.Second, "the chunks in flight are sent again at the fall back")
	assert.Equal(t, uint64(1), st.BlackHoles)
	assert.Zero(t, st.TooBig, "no ICMP reached the sender")
	assert.Equal(t, 1280, st.PLPMTU)
	assert.Positive(t, st.Fragmentable, "chunks built for 9000 went with DF clear")
	assert.Zero(t, bad.Load(), "payload intact")
}

// nativePair connects the project's own SCTP from h1 to a listener in h2,
// both with default settings (PLPMTUD on); both ends are aborted at the
// end of the test.
func nativePair(t *testing.T, topo *netns.Topology) (cl, sv nativeTransport) {
	t.Helper()
	var ln backend.Listener
	require.NoError(t, netns.In(topo.H2, func() (err error) {
		ln, err = native.Stack(native.Config{}, nil).Listen(net.JoinHostPort(topo.H2Addr, "0"))
		return err
	}))
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acc := make(chan nativeTransport, 1)
	go func() {
		s, _ := ln.Accept(ctx)
		n, _ := s.(nativeTransport)
		acc <- n
	}()
	require.NoError(t, netns.In(topo.H1, func() (err error) {
		cl, err = dialNative(ctx, ln.Addr().String())
		return err
	}))
	t.Cleanup(func() { _ = cl.Abort() })
	sv = <-acc
	require.NotNil(t, sv)
	t.Cleanup(func() { _ = sv.Abort() })
	return cl, sv
}

// startChecking starts both ends of a pair: the server counts the octets
// it receives (got) and the messages whose octet i is not byte(i) (bad),
// the pattern the tests write.
func startChecking(cl, sv backend.Transport) (got, bad *atomic.Int64) {
	got, bad = new(atomic.Int64), new(atomic.Int64)
	sv.Start(func(_ uint16, _ uint32, b []byte) {
		for i, v := range b {
			if v != byte(i) {
				bad.Add(1)
				break
			}
		}
		got.Add(int64(len(b)))
	}, func(error) {})
	cl.Start(func(uint16, uint32, []byte) {}, func(error) {})
	return got, bad
}
