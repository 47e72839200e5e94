package sctpllp

import (
	"bufio"
	"context"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/reseq"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
)

// vmRSS is the process's resident set (/proc/self/status), in octets.
func vmRSS(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err, "the RSS measurement needs Linux /proc")
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// earlyPeer is one hostile peer over a real sctp-native association: an
// Initiate on each of its streams, then early 21-octet DDP segments
// (DDP-SSN 2, 3, ...; 1 never comes).
type earlyPeer struct {
	tr       backend.Transport
	done     chan struct{}
	sessions int
	next     uint16
}

func dialEarlyPeer(ctx context.Context, t *testing.T, addr string, sessions int) *earlyPeer {
	t.Helper()
	tr, err := native.Stack(native.Config{}, nil).Dial(ctx, addr)
	require.NoError(t, err)
	p := &earlyPeer{tr: tr, done: make(chan struct{}), sessions: sessions, next: 2}
	tr.Start(func(uint16, uint32, []byte) {}, func(error) { close(p.done) })
	t.Cleanup(p.close)
	for sid := 1; sid <= sessions; sid++ {
		require.NoError(t, tr.WriteMsg(uint16(sid), backend.PPIDControl, ddpchunk.Control{Function: funcInitiate}.Append(nil)))
	}
	return p
}

func (p *earlyPeer) close() {
	_ = p.tr.Abort()
	<-p.done
}

// send sends n early segments on each stream, or fewer if the
// association ends first; it returns the segments sent.
func (p *earlyPeer) send(n int) int {
	seg := make([]byte, 21)
	sent := 0
	for range n {
		for sid := 1; sid <= p.sessions; sid++ {
			if err := p.tr.WriteMsg(uint16(sid), backend.PPIDSegment, ddpchunk.Segment{SSN: p.next, Segment: seg}.Append(nil)); err != nil {
				return sent
			}
			sent++
		}
		p.next++
		select {
		case <-p.done:
			return sent
		default:
		}
	}
	return sent
}

// TestAttack_NativeRSS_DDPResequencer (issue 43, figures in
// docs/security.md, "DDP re-sequencer"): 16 real sctp-native associations
// from one address (loopback) each open 16 sessions and hold early
// 21-octet DDP segments (the issue measured 664 octets of RSS a segment,
// +324 MB for 16 x 32,000). Each holds just under its share, at once: the
// server's charge never exceeds the address's share, its live heap grows
// by at most twice the charge, the associations beyond the share are
// aborted; then each floods 32,000 more per session and is aborted too,
// and the budget comes back when they end.
func TestAttack_NativeRSS_DDPResequencer(t *testing.T) {
	t.Cleanup(dropHeap)
	// The gaps stay open for the whole test (its own bound is tested in
	// TestReorder_GapTimer_RFC5043_10).
	ln, err := Listen("127.0.0.1:0", Config{Stack: native.Stack(native.Config{}, nil), MaxGapTime: time.Hour})
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// 16 peers: twice what the address share admits at their shares.
	const peers, sessions = 16, 16
	base := membudget.Process.Used()
	var (
		mu      sync.Mutex
		servers []*Association
		started int
		wg      sync.WaitGroup
	)
	go func() {
		for {
			a, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			servers = append(servers, a)
			mu.Unlock()
			wg.Go(func() {
				for {
					in, err := a.Accept(ctx)
					if err != nil {
						return
					}
					if s, err := in.Accept(AcceptParams{}); err == nil {
						s.Start(discardHandler{})
						mu.Lock()
						started++
						mu.Unlock()
					}
				}
			})
		}
	}()
	var ps []*earlyPeer
	for range peers {
		ps = append(ps, dialEarlyPeer(ctx, t, ln.Addr(), sessions))
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return started == peers*sessions
	}, time.Minute, 10*time.Millisecond, "every session accepted")
	heap1, rss1 := liveHeap(), vmRSS(t)

	// Just under the share each: 16 streams of perStream segments of 536
	// octets charged, their rings and bookkeeping.
	perStream := defaultMaxHeldAssocBytes / (sessions * reseq.BufCost(23))
	for sessions*(perStream*reseq.BufCost(23)+reseq.RingFor(uint16(perStream))*reseq.HeldEntryCost+reseq.EarlyCost) > defaultMaxHeldAssocBytes-64<<10 {
		perStream--
	}
	total := 0
	for _, p := range ps {
		total += p.send(perStream)
	}
	// Everything sent has arrived once the charge stays put for a second.
	last, still := int64(-1), 0
	require.Eventually(t, func() bool {
		u := membudget.Process.Used()
		if u == last {
			still++
		} else {
			last, still = u, 0
		}
		return still >= 4
	}, time.Minute, 250*time.Millisecond)
	// membudget.Process also carries package sctp's receive buffers: the
	// re-sequencers' part is what the associations report.
	procUsed := membudget.Process.Used() - base
	heap2, rss2 := liveHeap(), vmRSS(t)
	mu.Lock()
	var ended int
	var used int64
	for _, a := range servers {
		select {
		case <-a.Done():
			ended++
		default:
			used += a.Stats().HeldBytes
		}
	}
	mu.Unlock()
	t.Logf("%d associations x %d sessions from one address: %d early 21-octet segments sent (%.1f MB of DATA chunks); %d associations aborted for their share; %d octets charged by the re-sequencers (address share %d; the process budget %d); live heap +%d, RSS +%d over the same associations idle",
		peers, sessions, total, float64(total*(21+2+16))/1e6, ended, used, defaultMaxHeldAddrBytes, procUsed, heap2-heap1, rss2-rss1)
	assert.LessOrEqual(t, used, int64(defaultMaxHeldAddrBytes))
	assert.Less(t, procUsed, membudget.Process.Limit())
	assert.Positive(t, ended, "the address share aborted the associations beyond it")
	// The live heap also holds what package sctp keeps of the traffic
	// (its receive window per association: charged there, not here).
	const sctpDefaultBuffer = 4 << 20 // package sctp's default receive buffer
	assert.LessOrEqual(t, heap2-heap1, 2*used+peers*int64(sctpDefaultBuffer))

	// Then every peer floods on: each is aborted at its share.
	for _, p := range ps {
		total += p.send(32000)
	}
	mu.Lock()
	accepted := append([]*Association(nil), servers...)
	mu.Unlock()
	var aborted uint64
	for _, a := range accepted {
		select {
		case <-a.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("an attacked association did not end")
		}
		aborted += a.Stats().ShareAborts
	}
	wg.Wait()
	require.Len(t, accepted, peers)
	assert.Equal(t, uint64(peers), aborted, "every association went over its share")
	require.Eventually(t, func() bool { return membudget.Process.Used() == base }, 10*time.Second, 10*time.Millisecond,
		"the budget back to its baseline")
}
