package sctpllp

// The memory attacks on the re-sequencer (issue 43). They run after the
// pion handshake tests (file order), whose legitimate session during an
// INIT flood has a 20 s deadline that a loaded host running these first
// made it miss.

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"math/rand/v2"
	"net"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/membudget"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
)

// liveHeap is the heap of live objects after a full collection (twice:
// sync.Pool keeps a victim cache for one cycle).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// dropHeap leaves no pooled buffers behind for the heap measurements of
// later tests (pion_handshake_attack_test.go): two collections empty the
// pools, and their memory goes back to the OS.
func dropHeap() {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
}

// discardHandler takes every segment and keeps nothing.
type discardHandler struct{}

func (discardHandler) HandleSegment([]byte) error { return nil }
func (discardHandler) HandleClosed(error)         {}

// Kinds of stream in a reseqAttack.
const (
	atkStarted    = iota // session accepted and started
	atkQueued            // accepted, never started: segments queue before Start
	atkUndecided         // Initiate never decided: segments queue too
	atkNoInitiate        // chunks that claim to follow an Initiate never sent
)

type atkStream struct {
	sid      uint16
	kind     int
	next, hi uint16 // the receiver's next DDP-SSN; the next early one to send
}

// reseqAttack plays a hostile peer of one fake-transport association: on
// some streams sessions (started, accepted but not started, undecided), on
// others chunks before any Initiate; on each a random mix of early DDP
// segments of 1 to 1,400 octets and out-of-order chunks that fill gaps.
type reseqAttack struct {
	a       *Association
	ft      *fakeTransport
	rng     *rand.Rand
	streams []*atkStream
	stop    chan struct{}
}

func newReseqAttack(t *testing.T, cfg Config, raddr net.Addr, seed uint64) *reseqAttack {
	t.Helper()
	ft := newFake(64)
	ft.raddr = raddr
	cfg.KeepIdle = true
	// What the peer makes the association hold stays held however slow
	// the host: the time bounds have their own tests.
	cfg.MaxGapTime, cfg.QuietTime = time.Hour, time.Hour
	a := NewAssociation(ft, cfg)
	k := &reseqAttack{a: a, ft: ft, rng: rand.New(rand.NewPCG(seed, 7)), stop: make(chan struct{})}
	go func() { // the peer reads nothing
		for {
			select {
			case <-ft.out:
			case <-k.stop:
				return
			}
		}
	}()
	go func() { // the ULP: accepts and starts a third, accepts a third
		for {
			in, err := a.Accept(context.Background())
			if err != nil {
				return
			}
			switch in.StreamID % 3 {
			case 0:
				if s, err := in.Accept(AcceptParams{}); err == nil {
					s.Start(discardHandler{})
				}
			case 1:
				_, _ = in.Accept(AcceptParams{})
			}
		}
	}()
	t.Cleanup(func() {
		_ = a.Abort()
		close(k.stop)
	})
	for sid := uint16(1); sid < 64; sid++ {
		s := &atkStream{sid: sid, kind: atkNoInitiate, next: 0, hi: 1}
		if sid < 48 {
			s.kind = [3]int{atkStarted, atkQueued, atkUndecided}[sid%3]
			ft.injectCtl(sid, ddpchunk.Control{SSN: 0, Function: funcInitiate})
			s.next, s.hi = 1, 2
		}
		k.streams = append(k.streams, s)
	}
	return k
}

func (k *reseqAttack) over() bool {
	select {
	case <-k.a.Done():
		return true
	default:
		return false
	}
}

// step sends one chunk.
func (k *reseqAttack) step() {
	s := k.streams[k.rng.IntN(len(k.streams))]
	seg := make([]byte, 1+k.rng.IntN(1400))
	switch {
	case s.kind == atkNoInitiate:
		k.ft.injectSeg(s.sid, s.hi, seg) // DDP-SSN 0, the Initiate, never comes
		s.hi++
	case s.kind != atkStarted && k.rng.IntN(2) == 0:
		k.ft.injectSeg(s.sid, s.next, seg) // in order, queued before Start
		s.next++
		s.hi = s.next + 1
	case s.hi-s.next > 1 && (k.rng.IntN(8) == 0 || s.hi-s.next >= contract.MaxSSNWindow):
		k.ft.injectSeg(s.sid, s.next, seg) // fills the gap: all held delivered
		s.next = s.hi
		s.hi = s.next + 1
	default:
		k.ft.injectSeg(s.sid, s.hi, seg) // early: s.next stays missing
		s.hi++
	}
}

// fill sends until the association holds at least target octets or is
// aborted; it reports whether it was aborted.
func (k *reseqAttack) fill(target int64) bool {
	for i := 0; ; i++ {
		if i%64 == 0 && (k.over() || k.a.Stats().HeldBytes >= target) {
			return k.over()
		}
		k.step()
	}
}

// TestAttack_OneAssociation_HeldMemoryWithinTwiceShare (issue 43): any mix
// of early DDP segments, out-of-order chunks, segments before Start and
// chunks before an Initiate from one association (default configuration,
// membudget.Process): the live heap grows by at most twice the share it is
// charged against; beyond the share the association is aborted with
// errMemoryShare, and the process budget comes back to where it was.
func TestAttack_OneAssociation_HeldMemoryWithinTwiceShare(t *testing.T) {
	t.Cleanup(dropHeap)
	base := membudget.Process.Used()
	share := int64(defaultMaxHeldAssocBytes)
	heap0 := liveHeap()
	k := newReseqAttack(t, Config{}, nil, 1)
	require.False(t, k.fill(share*9/10), "aborted below 90%% of its share: %v", k.a.Err())
	held := k.a.Stats().HeldBytes
	growth := liveHeap() - heap0
	t.Logf("held %d octets charged (share %d); live heap +%d (%.2fx the charge)", held, share, growth, float64(growth)/float64(held))
	assert.LessOrEqual(t, growth, 2*share, "held memory within twice the share")
	assert.GreaterOrEqual(t, growth, held/2, "the measurement sees what is held")
	assert.LessOrEqual(t, membudget.Process.Used()-base, share)

	require.True(t, k.fill(2*share), "the association goes over its share")
	require.ErrorIs(t, k.a.Err(), errMemoryShare)
	assert.Equal(t, uint64(1), k.a.Stats().ShareAborts)
	assert.Equal(t, base, membudget.Process.Used(), "the process budget back to its baseline")
}

// TestAttack_64AssociationsOneAddress (issue 43): 64 associations from one
// address (sctp's per-address cap), each attacking as above with the
// default configuration: membudget.Process stays within the address's
// share, far under its limit; a fresh association from another address
// still completes a session and a Write both ways and holds an early chunk;
// when they end, the budget is back at its baseline.
func TestAttack_64AssociationsOneAddress(t *testing.T) {
	t.Cleanup(dropHeap)
	base := membudget.Process.Used()
	heap0 := liveHeap()
	evil := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5000}
	var atk []*reseqAttack
	aborted := 0
	for i := range 64 {
		k := newReseqAttack(t, Config{}, evil, uint64(i))
		if k.fill(defaultMaxHeldAssocBytes * 9 / 10) {
			require.ErrorIs(t, k.a.Err(), errMemoryShare)
			aborted++
		}
		atk = append(atk, k)
		require.Less(t, membudget.Process.Used(), membudget.Process.Limit())
		require.LessOrEqual(t, membudget.Process.Used()-base, int64(defaultMaxHeldAddrBytes))
	}
	used := membudget.Process.Used() - base
	growth := liveHeap() - heap0
	t.Logf("64 associations from one address: %d aborted for their share, %d octets charged (address share %d), live heap +%d",
		aborted, used, defaultMaxHeldAddrBytes, growth)
	assert.Positive(t, aborted, "the address share stopped some")
	assert.LessOrEqual(t, growth, 2*int64(defaultMaxHeldAddrBytes))

	// A fresh client from another address.
	ft := newFake(64)
	ft.raddr = &net.UDPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 5000}
	a := NewAssociation(ft, Config{KeepIdle: true})
	defer a.Close()
	s, h := passiveSession(t, a, ft, 5)
	ft.injectSeg(5, 2, []byte("second")) // early: held, charged
	assert.Positive(t, a.Stats().HeldBytes)
	ft.injectSeg(5, 1, []byte("first"))
	h.waitCount(t, 2)
	assert.Equal(t, [][]byte{[]byte("first"), []byte("second")}, h.segs)
	require.NoError(t, s.SendSegment([]byte{0xC0}, []byte("write")))
	m := ft.next(t)
	assert.Equal(t, append([]byte{0, 1, 0xC0}, "write"...), m.b)
	assert.Zero(t, a.Stats().ShareAborts)

	for _, k := range atk {
		_ = k.a.Abort()
	}
	require.NoError(t, a.Close())
	assert.Equal(t, base, membudget.Process.Used(), "the process budget back to its baseline")
}
