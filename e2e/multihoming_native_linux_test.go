//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
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

func newMHNative(t *testing.T, cfg native.Config) *mhNative {
	t.Helper()
	require.Zero(t, os.Geteuid(), "needs root: network namespaces (make test runs as root)")
	d, err := netns.NewDualPath(1500)
	require.NoError(t, err)
	t.Cleanup(d.Destroy)
	laddr := fmt.Sprintf("%s/%s:7400", d.AAddr[0], d.AAddr[1])
	var ln backend.Listener
	require.NoError(t, netns.In(d.A, func() (err error) {
		ln, err = native.Stack(cfg, nil).Listen(laddr)
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

// TestMultihomingNative_RFC5043_7_2: RFC 5043 §7.2 runs DDP over SCTP for
// its multihoming, "for network fault tolerance", here in the default
// mode. A 64-stream RDMA workload (Write, Read, Send, verified at both
// ends) runs over one multi-homed sctp-native association while the
// primary link is cut (devices down), restored, black-holed (packets vanish,
// the link stays up) and healed. Every work request completes exactly
// once and succeeds, no stream is terminated, traffic resumes on the other
// path within 1.5 s of each failure (RFC 9260 §6.4, §8.2; RFC 7829's
// potentially-failed state at the first T3-rtx), and the primary rejoins
// once a HEARTBEAT confirms it again (§8.3: within HB.interval + RTO).
func TestMultihomingNative_RFC5043_7_2(t *testing.T) {
	// HB.interval 1 s: a path that failed (inactive after Path.Max.Retrans)
	// is probed once per HB.interval (RFC 9260 §8.3), so that is how soon
	// it can rejoin (the default, 30 s, is for the other tests).
	m := newMHNative(t, native.Config{Streams: 65, HeartbeatInterval: time.Second})
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
			Duration: 11 * time.Second, Random: true, ProgressEvery: 10 * time.Millisecond, Progress: c.progress})
		done <- outcome{res, err}
	}()
	type event struct {
		name string
		at   time.Time
	}
	var events []event
	at := func(d time.Duration, name string, f func() error) {
		time.Sleep(time.Until(start.Add(d)))
		require.NoError(t, f(), name)
		events = append(events, event{name, time.Now()})
		t.Logf("%5.2fs %s", time.Since(start).Seconds(), name)
	}
	require.Equal(t, "active", m.pathTo(t, 0).State)
	at(2*time.Second, "primary link cut", func() error { return m.d.Cut(0) })
	at(4500*time.Millisecond, "primary link restored", func() error { return m.d.Restore(0) })
	restored := time.Now()
	require.Eventually(t, func() bool { return m.pathTo(t, 0).State == "active" }, 10*time.Second, 10*time.Millisecond,
		"the restored path answers a HEARTBEAT and is active again: %+v", m.paths(t))
	t.Logf("the restored path was active again after %v", time.Since(restored).Round(time.Millisecond))
	at(6500*time.Millisecond, "primary link black-holed", func() error { return m.d.BlackHole(0) })
	at(9*time.Second, "primary link healed", func() error { return m.d.Heal(0) })
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
	for i, e := range events {
		end := start.Add(11 * time.Second)
		if i+1 < len(events) {
			end = events[i+1].at
		}
		g := c.gap(e.at, end)
		t.Logf("FAILOVER %-28s longest gap in completions: %v", e.name, g.Round(time.Millisecond))
		if i%2 == 0 { // the failures
			assert.Less(t, g, 1500*time.Millisecond, "%s: traffic resumed on the other path", e.name)
		}
	}
	for _, p := range m.paths(t) {
		t.Logf("path %s: %s, SRTT %v, %d octets sent", p.Addr, p.State, p.SRTT, p.OctetsSent)
	}
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
