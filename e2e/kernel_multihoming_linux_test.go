//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/workload"
	nsctp "github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
)

// The two hosts of the kernel↔native multihoming interop (newTwoLinkNet):
// the kernel in the test's namespace, where net.sctp.udp_port is set,
// sctp-native in the peer namespace.
const (
	mhKernelAddrs = "10.71.1.1/10.71.2.1"
	mhNativeAddrs = "10.71.1.2/10.71.2.2"
)

// kernelMHConfig is the kernel end: the failover test's fast failure
// detection with the interop's path MTU and stream count.
func kernelMHConfig(local string) kernel.Config {
	c := failoverConfig(local)
	c.Streams, c.PathMTU = interopStreams, interopMTU
	return c
}

// nativeMHConfig is the native end: HEARTBEATs every 500 ms so both
// paths are confirmed (RFC 9260 §5.4) early in the test, and no UDP
// offload: a veth hands a UDP_SEGMENT run to the kernel's SCTP-over-UDP
// tunnel unsplit, and the guest's Linux 6.1 then crashed (kernel BUG at
// mm/slub.c:419 in sctp_recvmsg) once multihomed associations sent runs
// (docs/kernel-sctp.md, docs/sctp-native.md: Config.NoOffload is for
// that peer).
func nativeMHConfig(local string) native.Config {
	return native.Config{Streams: interopStreams, MTU: interopMTU, LocalAddr: local,
		HeartbeatInterval: 500 * time.Millisecond, NoOffload: true}
}

// mhInterop is one multihomed kernel↔native association over two links.
type mhInterop struct {
	net1, net2 *twoLinkNet
	kt, nt     backend.Transport
}

// newMHInterop joins the namespaces by two links and forms the
// association, the kernel listening on SCTP port 5000 of both its
// addresses (native dials its UDP port 9899 there, RFC 6951 §5.1) or
// dialing both of the native listener's addresses.
func newMHInterop(t *testing.T, kernelListens bool) *mhInterop {
	t.Helper()
	m := &mhInterop{}
	m.net1, m.net2 = newTwoLinkNet(t)
	// The kernel drops its own GSO batches over the UDP tunnel
	// (docs/kernel-sctp.md): both offloads off where it sends.
	for _, dev := range []string{m.net1.here, m.net2.here} {
		require.NoError(t, setFeatures(dev, false, "tx-generic-segmentation", "tx-sctp-segmentation"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if kernelListens {
		ln, err := kernel.Stack(kernelMHConfig("")).Listen(fmt.Sprintf("%s:%d", mhKernelAddrs, pionSCTPPort))
		require.NoError(t, err)
		defer ln.Close()
		acc := acceptAsync(ctx, ln)
		var dialErr error
		m.net2.do(t, func() { // the native socket lives in the peer namespace
			cfg := nativeMHConfig(mhNativeAddrs + ":0")
			cfg.PeerPort = pionSCTPPort
			m.nt, dialErr = native.Stack(cfg, nil).Dial(ctx, fmt.Sprintf("%s:%d", mhKernelAddrs, encapsPort))
		})
		require.NoError(t, dialErr, "native dial")
		t.Cleanup(func() { _ = m.nt.Abort() })
		r := <-acc
		require.NoError(t, r.err, "kernel accept")
		m.kt = r.tr
		t.Cleanup(func() { _ = m.kt.Abort() })
	} else {
		var ln backend.Listener
		var lnErr error
		m.net2.do(t, func() { ln, lnErr = native.Stack(nativeMHConfig(""), nil).Listen(mhNativeAddrs + ":0") })
		require.NoError(t, lnErr)
		defer ln.Close()
		acc := acceptAsync(ctx, ln)
		kcfg := kernelMHConfig(mhKernelAddrs + ":0")
		// The listener's address is "ip1/ip2:port": the UDP port of both.
		a := ln.Addr().String()
		port, err := strconv.ParseUint(a[strings.LastIndexByte(a, ':')+1:], 10, 16)
		require.NoError(t, err, a)
		kcfg.RemoteUDPEncapsPort = uint16(port)
		kt, err := kernel.Stack(kcfg).Dial(ctx, mhNativeAddrs+":7777")
		require.NoError(t, err, "kernel dial")
		m.kt = kt
		t.Cleanup(func() { _ = m.kt.Abort() })
		r := <-acc
		require.NoError(t, r.err, "native accept")
		m.nt = r.tr
		t.Cleanup(func() { _ = m.nt.Abort() })
	}
	// RFC 5043 §5.1: each end saw the other's DDP indication.
	for _, tr := range []backend.Transport{m.nt, m.kt} {
		ind, ok := tr.PeerAdaptation()
		assert.True(t, ok, "%s saw the peer's indication", tr.Kind())
		assert.Equal(t, backend.AdaptationIndicationDDP, ind)
	}
	return m
}

// kernelPathInactive and kernelPathActive are SCTP_INACTIVE and
// SCTP_ACTIVE in the STATE column of
// /proc/net/sctp/remaddr (enum sctp_transport_state: 0 inactive, 1
// potentially failed, 2 active, 3 unconfirmed).
const (
	kernelPathInactive = "0"
	kernelPathActive   = "2"
)

// kernelPathStates maps each remote address of the namespace's kernel
// associations to its transport's state (/proc/net/sctp/remaddr).
func kernelPathStates(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/net/sctp/remaddr")
	require.NoError(t, err)
	st := map[string]string{}
	for _, l := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(l); len(f) >= 8 {
			st[f[0]] = f[7]
		}
	}
	return st
}

// sctpSNMP reads the SCTP counters of the calling thread's network
// namespace (/proc/thread-self/net/sctp/snmp: name, value per line).
func sctpSNMP(t *testing.T) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/net/sctp/snmp")
	require.NoError(t, err)
	c := map[string]uint64{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			v, err := strconv.ParseUint(f[1], 10, 64)
			require.NoError(t, err, l)
			c[f[0]] = v
		}
	}
	require.Contains(t, c, "SctpInSCTPPacks")
	return c
}

// doneBy is the completed count last sampled at or before at.
func (c *completions) doneBy(at time.Time) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n uint64
	for i, t := range c.at {
		if t.After(at) {
			break
		}
		n = c.done[i]
	}
	return n
}

// paths is the native end's per-path figures.
func (m *mhInterop) paths(t *testing.T) []nsctp.PathStats {
	t.Helper()
	s, ok := m.nt.(interface{ Stats() nsctp.Stats })
	require.True(t, ok, "the native transport reports sctp.Stats")
	return s.Stats().Paths
}

// logKernel logs both ends' view of the paths: the kernel's peer
// addresses and /proc/net/sctp/remaddr (STATE as kernelPathActive, RTO
// in jiffies), native's Stats().Paths.
func (m *mhInterop) logKernel(t *testing.T, when string) {
	t.Helper()
	t.Logf("%s: kernel's peer addresses %s", when, m.kt.RemoteAddr())
	for _, f := range []string{"/proc/net/sctp/remaddr", "/proc/net/sctp/assocs"} {
		b, err := os.ReadFile(f)
		if err == nil {
			t.Logf("%s: %s\n%s", when, f, strings.TrimSpace(string(b)))
		}
	}
	for _, p := range m.paths(t) {
		t.Logf("%s: native path %s: %s, primary %v, SRTT %v, %d octets sent, %d errors",
			when, p.Addr, p.State, p.Primary, p.SRTT, p.OctetsSent, p.Errors)
	}
}

// testKernelNativeMultihomed: RFC 6951 SCTP-over-UDP between Linux kernel
// SCTP and sctp-native, both multi-homed (two addresses each, RFC 9260
// §6.4). Both native paths become active (the kernel answers HEARTBEATs
// on each, §5.4, §8.3); the RDMA workload (every operation on 8 streams,
// verified at both ends) runs while the primary link is cut: traffic
// resumes on the other link, every work request completes once and
// succeeds; restored, the link is active again at both ends. No SCTP
// packet ever leaves unencapsulated.
func testKernelNativeMultihomed(t *testing.T, kernelListens bool) {
	m := newMHInterop(t, kernelListens)
	formed := time.Now()
	m.logKernel(t, "after the handshake")
	ok := assert.Eventually(t, func() bool {
		ps := m.paths(t)
		n := 0
		for _, p := range ps {
			if p.State == "active" {
				n++
			}
		}
		return len(ps) == 2 && n == 2
	}, 15*time.Second, 20*time.Millisecond, "both native paths active")
	ok = assert.Eventually(t, func() bool {
		st := kernelPathStates(t)
		for _, a := range strings.Split(mhNativeAddrs, "/") {
			if st[a] != kernelPathActive {
				return false
			}
		}
		return true
	}, 15*time.Second, 20*time.Millisecond, "both of the kernel's paths active") && ok
	t.Logf("both paths active at both ends %v after the handshake", time.Since(formed).Round(time.Millisecond))
	m.logKernel(t, "after the heartbeats")
	require.True(t, ok, "paths: %+v; kernel: %v", m.paths(t), kernelPathStates(t))

	client := sctpllp.NewAssociation(m.nt, sctpllp.Config{KeepIdle: true})
	server := sctpllp.NewAssociation(m.kt, sctpllp.Config{KeepIdle: true})
	if !kernelListens {
		client, server = server, client
	}
	defer client.Abort()
	defer server.Abort()
	var c completions
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type outcome struct {
		res *workload.Result
		err error
	}
	done := make(chan outcome, 1)
	snmp0 := sctpSNMP(t) // the namespace's counters also hold earlier subtests'
	start := time.Now()
	go func() {
		res, err := workload.Run(ctx, client, server, workload.Config{Streams: 8, MaxSize: 16 << 10,
			Duration: 6 * time.Second, Random: true, ProgressEvery: 10 * time.Millisecond, Progress: c.progress})
		done <- outcome{res, err}
	}()
	time.Sleep(2 * time.Second)
	b1, b2 := m.net1.txOctets(t), m.net2.txOctets(t)
	cut := time.Now()
	m.net1.setUp(t, false)
	snmpCut := sctpSNMP(t)
	t.Logf("%5.2fs primary link cut (both ends down); sent by the kernel so far: link 1 %d octets, link 2 %d; retransmitted chunks %d, T3-rtx expiries %d",
		time.Since(start).Seconds(), b1, b2, snmpCut["SctpRetransChunks"]-snmp0["SctpRetransChunks"],
		snmpCut["SctpT3RtxExpireds"]-snmp0["SctpT3RtxExpireds"])
	o := <-done
	require.NoError(t, o.err)
	a2 := m.net2.txOctets(t)
	m.logKernel(t, "after the cut")
	res := o.res
	require.NoError(t, res.Err())
	assert.Equal(t, res.Posted, res.Completed, "every work request completes")
	assert.Equal(t, res.Completed, res.Succeeded, "and none is flushed")
	assert.Zero(t, res.Killed)
	for _, s := range res.Streams {
		assert.False(t, s.Erroneous || s.ServerErroneous, "stream %d labelled erroneous", s.ID)
	}
	g := c.gap(cut, start.Add(6*time.Second))
	t.Logf("%d operations (%d after the cut), %d octets in %v; longest gap in completions after the cut %v; kernel sent %d octets on link 2 after it",
		res.Succeeded, res.Completed-c.doneBy(cut), res.Octets, res.Elapsed.Round(time.Millisecond), g.Round(time.Millisecond), a2-b2)
	// Not a rate: under TCG on a loaded host a few hundred operations
	// in the 4 s after the cut is all there may be.
	assert.Greater(t, res.Completed, c.doneBy(cut), "work requests completed after the cut")
	assert.Greater(t, a2-b2, uint64(16<<10), "the kernel carried on over link 2")
	// Most, not all: the kernel sends a retransmission after a spurious
	// T3-rtx on a loaded host to the other path (RFC 9260 §6.4.1). Under
	// TCG on a loaded host the guest can stall long enough for several
	// such expiries, and then the other link rightly carries more.
	if t3 := snmpCut["SctpT3RtxExpireds"] - snmp0["SctpT3RtxExpireds"]; t3 <= 1 {
		assert.Greater(t, b1, b2, "before the cut the primary link carried the data")
	} else {
		t.Logf("%d T3-rtx expiries before the cut (a stalled guest) moved data to link 2: its share is not checked", t3)
	}
	assert.Eventually(t, func() bool { return kernelPathStates(t)[strings.Split(mhNativeAddrs, "/")[0]] == kernelPathInactive },
		10*time.Second, 20*time.Millisecond, "the kernel marks the cut path inactive (RFC 9260 §8.2)")
	assert.Less(t, g, 3*time.Second, "traffic resumed on the other path")
	// The link comes back: HEARTBEATs over UDP confirm the path again at
	// both ends (RFC 9260 §8.3: within HB.interval + RTO).
	m.net1.setUp(t, true)
	restored := time.Now()
	first := strings.Split(mhKernelAddrs, "/")[0]
	assert.Eventually(t, func() bool {
		if kernelPathStates(t)[strings.Split(mhNativeAddrs, "/")[0]] != kernelPathActive {
			return false
		}
		for _, p := range m.paths(t) {
			if p.Addr.Addr().String() == first {
				return p.State == "active"
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the restored path is active again at both ends")
	t.Logf("the restored primary was active at both ends after %v", time.Since(restored).Round(time.Millisecond))
	// RFC 6951 on every path: the kernel in the native namespace saw no
	// SCTP packet, so none of the kernel's left unencapsulated (one to
	// the second address would be out of the blue there, RFC 9260 §8.4).
	var snmp map[string]uint64
	m.net2.do(t, func() { snmp = sctpSNMP(t) })
	here := sctpSNMP(t) // the kernel end's: its decapsulated packets count there
	t.Logf("SctpInSCTPPacks: %d in the kernel's namespace, %d in the native one (SctpOutOfBlues %d)",
		here["SctpInSCTPPacks"], snmp["SctpInSCTPPacks"], snmp["SctpOutOfBlues"])
	assert.Positive(t, here["SctpInSCTPPacks"], "the counter counts what arrives over UDP")
	assert.Zero(t, snmp["SctpInSCTPPacks"], "unencapsulated SCTP reached the native host")
}
