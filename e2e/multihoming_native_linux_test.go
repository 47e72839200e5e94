//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/capture"
	"github.com/sctp-rdma/sctp-rdma/internal/netns"
	"github.com/sctp-rdma/sctp-rdma/internal/pcapread"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/workload"
	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
)

// mhNative is one multi-homed sctp-native association between the two
// hosts of a netns.DualPath, run by the adaptation at both ends: the
// client in B dials both of A's addresses from both of its own.
type mhNative struct {
	d              *netns.DualPath
	client, server *sctpllp.Association
	ct             backend.Transport
}

// newMHNative connects the two hosts with cfg; each of adjust, if any,
// changes the configuration of one end (server true: the listener's).
func newMHNative(t *testing.T, cfg native.Config, adjust ...func(server bool, c *native.Config)) *mhNative {
	t.Helper()
	require.Zero(t, os.Geteuid(), "needs root: network namespaces (make test runs as root)")
	d, err := netns.NewDualPath(1500)
	require.NoError(t, err)
	t.Cleanup(d.Destroy)
	laddr := fmt.Sprintf("%s/%s:7400", d.AAddr[0], d.AAddr[1])
	scfg := cfg
	for _, f := range adjust {
		f(true, &scfg)
	}
	var ln backend.Listener
	require.NoError(t, netns.In(d.A, func() (err error) {
		ln, err = native.Stack(scfg, nil).Listen(laddr)
		return err
	}))
	t.Cleanup(func() { _ = ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type accepted struct {
		tr  backend.Transport
		err error
	}
	acc := make(chan accepted, 1)
	go func() {
		tr, err := ln.Accept(ctx)
		acc <- accepted{tr, err}
	}()
	ccfg := cfg
	ccfg.LocalAddr = fmt.Sprintf("%s/%s:0", d.BAddr[0], d.BAddr[1])
	for _, f := range adjust {
		f(false, &ccfg)
	}
	var ct backend.Transport
	require.NoError(t, netns.In(d.B, func() (err error) {
		ct, err = native.Stack(ccfg, nil).Dial(ctx, laddr)
		return err
	}))
	r := <-acc
	require.NoError(t, r.err)
	m := &mhNative{d: d, ct: ct,
		client: sctpllp.NewAssociation(ct, sctpllp.Config{KeepIdle: true}),
		server: sctpllp.NewAssociation(r.tr, sctpllp.Config{KeepIdle: true})}
	t.Cleanup(func() { _ = m.client.Abort(); _ = m.server.Abort() })
	return m
}

// paths returns the client association's per-path figures.
func (m *mhNative) paths(t *testing.T) []sctp.PathStats {
	t.Helper()
	s, ok := m.ct.(interface{ Stats() sctp.Stats })
	require.True(t, ok, "the native transport reports sctp.Stats")
	return s.Stats().Paths
}

// pathTo returns the client's path to A's address on link i.
func (m *mhNative) pathTo(t *testing.T, i int) sctp.PathStats {
	t.Helper()
	for _, p := range m.paths(t) {
		if p.Addr.Addr().String() == m.d.AAddr[i] {
			return p
		}
	}
	t.Fatalf("no path to %s in %+v", m.d.AAddr[i], m.paths(t))
	return sctp.PathStats{}
}

// completions samples the workload's completed count every 10 ms, so that
// the longest stretch without one after an event is its failover time.
type completions struct {
	mu   sync.Mutex
	at   []time.Time
	done []uint64
}

func (c *completions) progress(tt workload.Totals) {
	c.mu.Lock()
	c.at = append(c.at, time.Now())
	c.done = append(c.done, tt.Completed)
	c.mu.Unlock()
}

// gap is the longest time without a new completion between from and to.
func (c *completions) gap(from, to time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var longest time.Duration
	last := from
	var lastDone uint64
	for i, at := range c.at {
		if at.Before(from) {
			lastDone = c.done[i]
			continue
		}
		if at.After(to) {
			break
		}
		if c.done[i] != lastDone {
			longest = max(longest, at.Sub(last))
			last, lastDone = at, c.done[i]
		}
	}
	end := to
	if now := time.Now(); now.Before(end) {
		end = now
	}
	return max(longest, end.Sub(last))
}

// step is one change to the links at a time into a workload run; fail
// marks a failure, after which traffic must resume within 1.5 s.
type step struct {
	at   time.Duration
	name string
	do   func() error
	fail bool
}

// runSteps runs a 64-stream RDMA workload (Write, Read, Send, verified at
// both ends) for d over m while the steps change the links, and checks
// that every work request completes exactly once and succeeds, no stream
// is terminated, and traffic resumes within 1.5 s of each failure. after,
// if not nil, runs after each step.
func runSteps(t *testing.T, m *mhNative, d time.Duration, steps []step, after func(step)) {
	t.Helper()
	var c completions
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type outcome struct {
		res *workload.Result
		err error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		res, err := workload.Run(ctx, m.client, m.server, workload.Config{Streams: 64, MaxSize: 16 << 10,
			Duration: d, Random: true, ProgressEvery: 10 * time.Millisecond, Progress: c.progress})
		done <- outcome{res, err}
	}()
	took := make([]time.Time, len(steps))
	for i, s := range steps {
		time.Sleep(time.Until(start.Add(s.at)))
		require.NoError(t, s.do(), s.name)
		took[i] = time.Now()
		t.Logf("%5.2fs %s", time.Since(start).Seconds(), s.name)
		if after != nil {
			after(s)
		}
	}
	o := <-done
	require.NoError(t, o.err)
	res := o.res
	require.NoError(t, res.Err())
	assert.Equal(t, res.Posted, res.Completed, "every work request completes")
	assert.Equal(t, res.Completed, res.Succeeded, "and none is flushed")
	assert.Zero(t, res.Killed)
	for _, s := range res.Streams {
		assert.False(t, s.Erroneous || s.ServerErroneous, "stream %d labelled erroneous", s.ID)
	}
	t.Logf("%d operations, %d octets in %v over 64 streams", res.Succeeded, res.Octets, res.Elapsed.Round(time.Millisecond))
	for i, s := range steps {
		end := start.Add(d)
		if i+1 < len(steps) {
			end = took[i+1]
		}
		g := c.gap(took[i], end)
		t.Logf("FAILOVER %-28s longest gap in completions: %v", s.name, g.Round(time.Millisecond))
		if s.fail {
			assert.Less(t, g, 1500*time.Millisecond, "%s: traffic resumed on the other path", s.name)
		}
	}
	for _, p := range m.paths(t) {
		t.Logf("path %s: %s, SRTT %v, %d octets sent", p.Addr, p.State, p.SRTT, p.OctetsSent)
	}
}

// TestMultihomingNative_RFC5043_7_2: RFC 5043 §7.2 runs DDP over SCTP for
// its multihoming, "for network fault tolerance", here in the default
// mode. The workload of runSteps runs over one multi-homed sctp-native
// association while the primary link is cut (devices down), restored,
// black-holed (packets vanish, the link stays up) and healed: traffic
// resumes on the other path within 1.5 s of each failure (RFC 9260 §6.4,
// §8.2; RFC 7829's potentially-failed state at the first T3-rtx), and the
// primary rejoins once a HEARTBEAT confirms it again (§8.3: within
// HB.interval + RTO).
func TestMultihomingNative_RFC5043_7_2(t *testing.T) {
	// HB.interval 1 s: a path that failed (inactive after Path.Max.Retrans)
	// is probed once per HB.interval (RFC 9260 §8.3), so that is how soon
	// it can rejoin (the default, 30 s, is for the other tests).
	m := newMHNative(t, native.Config{Streams: 65, HeartbeatInterval: time.Second})
	require.Equal(t, "active", m.pathTo(t, 0).State)
	runSteps(t, m, 11*time.Second, []step{
		{2 * time.Second, "primary link cut", func() error { return m.d.Cut(0) }, true},
		{4500 * time.Millisecond, "primary link restored", func() error { return m.d.Restore(0) }, false},
		{6500 * time.Millisecond, "primary link black-holed", func() error { return m.d.BlackHole(0) }, true},
		{9 * time.Second, "primary link healed", func() error { return m.d.Heal(0) }, false},
	}, func(s step) {
		if s.name != "primary link restored" {
			return
		}
		restored := time.Now()
		require.Eventually(t, func() bool { return m.pathTo(t, 0).State == "active" }, 10*time.Second, 10*time.Millisecond,
			"the restored path answers a HEARTBEAT and is active again: %+v", m.paths(t))
		t.Logf("the restored path was active again after %v", time.Since(restored).Round(time.Millisecond))
	})
}

// TestMultihomingNative_FlappingPath_RFC9260_8_2: the primary link goes
// down and up every 700 ms for 7 s under the workload; each time it fails
// traffic moves to the other path within 1.5 s, each time it returns a
// HEARTBEAT may bring it back (§8.3), and the association neither ends
// nor loses or repeats a work request; once the link stays up the path
// is active again.
func TestMultihomingNative_FlappingPath_RFC9260_8_2(t *testing.T) {
	m := newMHNative(t, native.Config{Streams: 65, HeartbeatInterval: 500 * time.Millisecond})
	var steps []step
	for i := range 5 {
		at := time.Second + time.Duration(i)*1400*time.Millisecond
		steps = append(steps,
			step{at, fmt.Sprintf("flap %d: link down", i+1), func() error { return m.d.Cut(0) }, true},
			step{at + 700*time.Millisecond, fmt.Sprintf("flap %d: link up", i+1), func() error { return m.d.Restore(0) }, false})
	}
	runSteps(t, m, 9*time.Second, steps, nil)
	require.Eventually(t, func() bool { return m.pathTo(t, 0).State == "active" }, 10*time.Second, 10*time.Millisecond,
		"the primary is active again once its link stays up: %+v", m.paths(t))
}

// TestMultihomingNative_AsymmetricFailure_RFC9260_6_4: what the server
// sends on the primary link is lost, silently, while the client's packets
// there still arrive: the client's DATA reaches the server but its SACKs
// and HEARTBEAT ACKs do not come back. Both ends move to the other path
// within 1.5 s (the client at its T3-rtx, the server when its own DATA
// and HEARTBEATs go unanswered), and when the link heals the primary is
// active again.
func TestMultihomingNative_AsymmetricFailure_RFC9260_6_4(t *testing.T) {
	m := newMHNative(t, native.Config{Streams: 65, HeartbeatInterval: time.Second})
	runSteps(t, m, 8*time.Second, []step{
		{2 * time.Second, "server to client lost on link 0", func() error { return m.d.LoseAToB(0) }, true},
		{5 * time.Second, "link 0 healed", func() error { return m.d.RestoreAToB(0) }, false},
	}, nil)
	require.Eventually(t, func() bool { return m.pathTo(t, 0).State == "active" }, 10*time.Second, 10*time.Millisecond,
		"the primary is active again after the link healed: %+v", m.paths(t))
}

// TestMultihomingNative_BothPathsCut_RFC9260_8_1: with both links cut in
// the middle of the workload the association ends once the error count
// passes Association.Max.Retrans (here 4, RTO.Max 1 s: within about 10 s),
// and every work request completes, the unfinished ones with a flush
// error; none is lost.
func TestMultihomingNative_BothPathsCut_RFC9260_8_1(t *testing.T) {
	m := newMHNative(t, native.Config{Streams: 65, MaxRetrans: 4, RTO: sctp.RTOConfig{Max: time.Second}, HeartbeatInterval: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type outcome struct {
		res *workload.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := workload.Run(ctx, m.client, m.server, workload.Config{Streams: 64, MaxSize: 16 << 10,
			Duration: 30 * time.Second, Random: true})
		done <- outcome{res, err}
	}()
	time.Sleep(1500 * time.Millisecond)
	cut := time.Now()
	require.NoError(t, m.d.Cut(0))
	require.NoError(t, m.d.Cut(1))
	select {
	case <-m.client.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the association outlived both paths by 20 s")
	}
	t.Logf("the association ended %v after both links were cut: %v", time.Since(cut).Round(time.Millisecond), m.client.Err())
	assert.Less(t, time.Since(cut), 15*time.Second)
	o := <-done
	res := o.res
	require.NotNil(t, res, "%v", o.err)
	assert.Error(t, res.Err(), "the run reports the lost association")
	assert.Equal(t, res.Posted, res.Completed, "every work request completes")
	assert.Positive(t, res.Flushed, "those in flight with a flush error")
	assert.Equal(t, res.Completed, res.Succeeded+res.Flushed)
}

// TestMultihomingNative_CapturePerAddress_RFC9260_6_4: the pcap capture
// of a multihomed sctp-native association (one wildcard UDP socket at
// each end) records every packet between the addresses it really used:
// read back, each end's file holds the handshake and HEARTBEATs on both
// links, in both directions, each packet between two addresses of one
// link, none with the wildcard address.
func TestMultihomingNative_CapturePerAddress_RFC9260_6_4(t *testing.T) {
	dir := t.TempDir()
	files := map[bool]string{true: filepath.Join(dir, "server.pcap"), false: filepath.Join(dir, "client.pcap")}
	writers := map[bool]*capture.Writer{}
	for server, path := range files {
		w, err := capture.CreateWith(path, capture.Options{})
		require.NoError(t, err)
		writers[server] = w
	}
	m := newMHNative(t, native.Config{Streams: 4, HeartbeatInterval: 200 * time.Millisecond}, func(server bool, c *native.Config) {
		c.Tap = writers[server].SCTPOverUDPTap(server)
	})
	require.Eventually(t, func() bool { return m.pathTo(t, 1).State == "active" }, 10*time.Second, 10*time.Millisecond,
		"the second path confirmed: %+v", m.paths(t))
	require.NoError(t, m.client.Abort())
	require.NoError(t, m.server.Abort())
	link := map[netip.Addr]int{}
	for i := range 2 {
		link[netip.MustParseAddr(m.d.AAddr[i])] = i
		link[netip.MustParseAddr(m.d.BAddr[i])] = i
	}
	for server, path := range files {
		require.NoError(t, writers[server].Close())
		pkts, err := pcapread.ReadPackets(path)
		require.NoError(t, err)
		seen := map[[2]int]int{} // [link, direction A→B 0 / B→A 1]
		for _, p := range pkts {
			ls, okS := link[p.Src.Addr()]
			ld, okD := link[p.Dst.Addr()]
			require.True(t, okS && okD && ls == ld, "server %v: a packet recorded between %v and %v", server, p.Src, p.Dst)
			dir := 0
			if p.Src.Addr().String() == m.d.BAddr[ls] {
				dir = 1
			}
			seen[[2]int{ls, dir}]++
		}
		for i := range 2 {
			for dir := range 2 {
				assert.Positive(t, seen[[2]int{i, dir}], "server %v: no packet on link %d direction %d: %v", server, i, dir, seen)
			}
		}
		t.Logf("server %v: %d packets, by [link, direction]: %v", server, len(pkts), seen)
	}
}
