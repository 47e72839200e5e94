package sctpllp

import (
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// fakeTransport is a test-only Transport: the test plays the peer, reading
// what the adaptation writes and injecting what the peer "sends".
type fakeTransport struct {
	maxMsg int
	n      int
	out    chan fakeMsg
	fn     func(sid uint16, ppid uint32, b []byte)
	done   func(error)
	mu     sync.Mutex
	resets []uint16
	ended  bool
	raddr  net.Addr // the peer's address, nil by default
}

type fakeMsg struct {
	sid  uint16
	ppid uint32
	b    []byte
}

func newFake(n int) *fakeTransport {
	return &fakeTransport{maxMsg: 1160, n: n, out: make(chan fakeMsg, 1024)}
}

func (f *fakeTransport) Start(fn func(uint16, uint32, []byte), done func(error)) {
	f.fn, f.done = fn, done
}
func (f *fakeTransport) WriteMsg(sid uint16, ppid uint32, parts ...[]byte) error {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	f.out <- fakeMsg{sid, ppid, b}
	return nil
}
func (f *fakeTransport) NumStreams() int { return f.n }
func (f *fakeTransport) MaxMessage() int { return f.maxMsg }
func (f *fakeTransport) ResetStream(sid uint16) error {
	f.mu.Lock()
	f.resets = append(f.resets, sid)
	f.mu.Unlock()
	return nil
}
func (f *fakeTransport) PeerAdaptation() (uint32, bool) { return 0, false }
func (f *fakeTransport) Kind() string                   { return "fake" }
func (f *fakeTransport) LocalAddr() net.Addr            { return nil }
func (f *fakeTransport) RemoteAddr() net.Addr           { return f.raddr }
func (f *fakeTransport) Close() error                   { f.end(nil); return nil }
func (f *fakeTransport) Abort() error                   { f.end(llp.ErrAborted); return nil }
func (f *fakeTransport) end(err error) {
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.ended = true
	f.mu.Unlock()
	f.done(err)
}

// inject delivers a control message from the peer.
func (f *fakeTransport) injectCtl(sid uint16, c ddpchunk.Control) {
	f.fn(sid, backend.PPIDControl, c.Append(nil))
}

func (f *fakeTransport) injectSeg(sid uint16, ssn uint16, seg []byte) {
	f.fn(sid, backend.PPIDSegment, ddpchunk.Segment{SSN: ssn, Segment: seg}.Append(nil))
}

func (f *fakeTransport) next(t *testing.T) fakeMsg {
	t.Helper()
	select {
	case m := <-f.out:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message written")
		return fakeMsg{}
	}
}

func (f *fakeTransport) nextCtl(t *testing.T) (uint16, ddpchunk.Control) {
	t.Helper()
	m := f.next(t)
	require.Equal(t, backend.PPIDControl, m.ppid)
	c, _, err := ddpchunk.ParseControl(m.b)
	require.NoError(t, err)
	return m.sid, c
}

func (f *fakeTransport) quiet(t *testing.T) {
	t.Helper()
	select {
	case m := <-f.out:
		t.Fatalf("unexpected write on stream %d ppid %d: %x", m.sid, m.ppid, m.b)
	case <-time.After(20 * time.Millisecond):
	}
}

// recHandler records what a session delivers.
type recHandler struct {
	mu       sync.Mutex
	segs     [][]byte
	closed   chan error
	failNext bool
}

func newRec() *recHandler { return &recHandler{closed: make(chan error, 1)} }

func (h *recHandler) HandleSegment(seg []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.segs = append(h.segs, append([]byte(nil), seg...))
	if h.failNext {
		return llp.ErrClosed
	}
	return nil
}

func (h *recHandler) HandleClosed(err error) { h.closed <- err }

func (h *recHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.segs)
}

func (h *recHandler) waitClosed(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.closed:
		select {
		case <-h.closed:
			t.Fatal("HandleClosed called twice")
		default:
		}
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("HandleClosed not called")
		return nil
	}
}

func (h *recHandler) waitCount(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return h.count() >= n }, 10*time.Second, time.Millisecond)
}
