package sctpllp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

type pmtuSegCounter struct {
	mu    sync.Mutex
	n     int
	bytes int
	done  chan struct{}
	once  sync.Once
}

func (h *pmtuSegCounter) HandleSegment(seg []byte) error {
	h.mu.Lock()
	h.n++
	h.bytes += len(seg)
	h.mu.Unlock()
	return nil
}

func (h *pmtuSegCounter) HandleClosed(error) { h.once.Do(func() { close(h.done) }) }

func (h *pmtuSegCounter) count() (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.bytes
}

// pmtuPair dials with path MTU tracking to a plain pion listener on
// loopback and opens session 1.
func pmtuPair(t *testing.T, pcfg dplpmtud.ConnConfig) (pionTransport, *Association, Session, Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := Listen("127.0.0.1:0", Config{Stack: pion.Stack(pion.Config{})})
	require.NoError(t, err)
	tr, err := dialPionPMTU(ctx, l.Addr(), pcfg)
	require.NoError(t, err)
	ca := NewAssociation(tr, Config{})
	sa, err := l.Accept(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	t.Cleanup(func() {
		_ = ca.Close()
		_ = sa.Close()
	})
	type res struct {
		s   Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := ca.Open(ctx, 1, OpenRequest{})
		ch <- res{s, err}
	}()
	in, err := sa.Accept(ctx)
	require.NoError(t, err)
	ss, err := in.Accept(AcceptParams{})
	require.NoError(t, err)
	r := <-ch
	require.NoError(t, r.err)
	return tr, ca, r.s, ss
}

// TestPionPMTU_ProbesLoopback_RFC5043_9: with tracking, probing over
// loopback reaches pion's largest packet and MULPDU is RFC 5043 §9's value
// for it.
func TestPionPMTU_ProbesLoopback_RFC5043_9(t *testing.T) {
	tr, ca, cs, ss := pmtuPair(t, dplpmtud.ConnConfig{Prober: dplpmtud.ProberConfig{ProbeTimeout: 50 * time.Millisecond}})
	want := pionLoopbackMTU
	require.Eventually(t, func() bool {
		s, ok := tr.PathMTU()
		return ok && s.PMTU == want
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, pmtu.SCTPMaxMessage(want, false, true), tr.MaxMessage())
	assert.Equal(t, pmtu.SCTPMULPDU(want, false, true), ca.MULPDU())
	assert.Equal(t, ca.MULPDU(), cs.MULPDU())
	h := &pmtuSegCounter{done: make(chan struct{})}
	ss.Start(h)
	cs.Start(&pmtuSegCounter{done: make(chan struct{})})
	require.NoError(t, cs.SendSegment(make([]byte, 18), make([]byte, cs.MULPDU()-18)))
	require.Eventually(t, func() bool { n, _ := h.count(); return n == 1 }, 5*time.Second, time.Millisecond)
	s, _ := tr.PathMTU()
	assert.Positive(t, s.ProbesAcked)
}

// TestPionPMTU_MULPDUFollowsPath_RFC5043_9: when the path MTU falls, the
// MULPDU falls with it at the next segment, larger segments are refused
// (RFC 5043 §9), and pion's packets — bundled up to its fixed 8192-octet
// budget — are cut to the path by the dplpmtud.Conn.
func TestPionPMTU_MULPDUFollowsPath_RFC5043_9(t *testing.T) {
	tr, ca, cs, ss := pmtuPair(t, dplpmtud.ConnConfig{NoProbing: true})
	big := pionLoopbackMTU
	assert.Equal(t, big, tr.PMTUConn().Path().MTU(), "loopback: capped at pion's packet")
	assert.Equal(t, 8130, ca.MULPDU())

	h := &pmtuSegCounter{done: make(chan struct{})}
	ss.Start(h)
	cs.Start(&pmtuSegCounter{done: make(chan struct{})})

	tr.PMTUConn().Path().Set(1280, dplpmtud.SourceTooBig)
	assert.Equal(t, 1224, tr.MaxMessage())
	assert.Equal(t, 1190, ca.MULPDU())
	assert.Equal(t, 1190, cs.MULPDU())
	// A segment sized for the previous MULPDU, built before the drop, is
	// still sent during shrinkGraceTime; nothing above it is, and after the
	// grace nothing above the new MULPDU is (RFC 5043 §9).
	require.NoError(t, cs.SendSegment(make([]byte, 18), make([]byte, 8130-18)))
	err := cs.SendSegment(make([]byte, 18), make([]byte, 8130-18+1))
	require.ErrorIs(t, err, llp.ErrSegmentTooLarge)
	time.Sleep(shrinkGraceTime + 50*time.Millisecond)
	err = cs.SendSegment(make([]byte, 18), make([]byte, 1190-18+1))
	require.Error(t, err)
	assert.True(t, errors.Is(err, llp.ErrSegmentTooLarge))

	const n = 2000
	for range n {
		require.NoError(t, cs.SendSegment(make([]byte, 18), make([]byte, 1190-18)))
	}
	require.Eventually(t, func() bool { c, _ := h.count(); return c == n+1 }, 10*time.Second, time.Millisecond)
	_, b := h.count()
	assert.Equal(t, n*1190+8130, b)
	s, ok := tr.PathMTU()
	require.True(t, ok)
	assert.Equal(t, 1280, s.PMTU)
	assert.Equal(t, uint64(1), s.Decreases)
	assert.Positive(t, s.Resplit, "pion's bundles were cut to the path")

	// The transport without tracking reports none.
	_, plain := pipePair(t, Config{})
	_, ok = plain.Transport().(pionTransport).PathMTU()
	assert.False(t, ok)
	assert.Nil(t, plain.Transport().(pionTransport).PMTUConn())
}

// TestPionPMTU_ListenerTracksEachPeer_RFC5043_9: associations accepted by
// pion.Config.PathMTU track their own path MTU (read through the helper socket)
// and MULPDU follows it.
func TestPionPMTU_ListenerTracksEachPeer_RFC5043_9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pcfg := dplpmtud.ConnConfig{Prober: dplpmtud.ProberConfig{ProbeTimeout: 50 * time.Millisecond}}
	l, err := pionPMTU(pcfg).Listen("127.0.0.1:0")
	require.NoError(t, err)
	ct, err := dialPionPMTU(ctx, l.Addr().String(), pcfg)
	require.NoError(t, err)
	acc, err := l.Accept(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	st := acc.(pionTransport)
	ca, sa := NewAssociation(ct, Config{}), NewAssociation(st, Config{})
	defer func() {
		_ = ca.Close()
		_ = sa.Close()
	}()
	require.NotNil(t, st.PMTUConn())
	want := pionLoopbackMTU
	require.Eventually(t, func() bool {
		s, ok := st.PathMTU()
		return ok && s.PMTU == want
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, pmtu.SCTPMULPDU(want, false, true), sa.MULPDU())
	s, _ := st.PathMTU()
	assert.Positive(t, s.ProbesAcked, "the passive side probed too")
}
