// Package transporttest is the conformance suite of the backend.Transport
// contract (see the Transport documentation): one set of tests that every
// SCTP backend runs unchanged, so that a new stack can be added with
// confidence. Each backend's package runs it over its Stack: native (plain
// and over DTLS) and pion on the host, kernel in the test VM.
//
// It uses the standard testing package only.
package transporttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// makePair is Run's mk.
type makePair = func(t *testing.T) (client, server backend.Transport)

// timeout bounds every wait of the suite.
const timeout = 20 * time.Second

// Run runs every conformance test as a subtest of t. mk returns an
// established association as its two ends, client (the dialer) and server
// (the accepting side), with at least 8 streams; neither end has been
// started. The suite closes or aborts both ends.
func Run(t *testing.T, mk func(t *testing.T) (client, server backend.Transport)) {
	t.Run("Identity", func(t *testing.T) { testIdentity(t, mk) })
	t.Run("Messages", func(t *testing.T) { testMessages(t, mk) })
	t.Run("LargeMessage", func(t *testing.T) { testLargeMessage(t, mk) })
	t.Run("StreamRange", func(t *testing.T) { testStreamRange(t, mk) })
	t.Run("EmptyMessage", func(t *testing.T) { testEmptyMessage(t, mk) })
	t.Run("GracefulCloseDelivers", func(t *testing.T) { testGracefulClose(t, mk) })
	t.Run("CrossedClose", func(t *testing.T) { testCrossedClose(t, mk) })
	t.Run("AbortReachesPeer", func(t *testing.T) { testAbort(t, mk) })
	t.Run("AbortUnblocksWriter", func(t *testing.T) { testAbortUnblocksWriter(t, mk) })
	t.Run("NoCallbackAfterClose", func(t *testing.T) { testNoCallbackAfterClose(t, mk) })
	t.Run("ResetStreamReuse", func(t *testing.T) { testResetStream(t, mk) })
	t.Run("MoreWriterFlush", func(t *testing.T) { testMoreWriter(t, mk) })
}

// msg is one delivered user message.
type msg struct {
	sid  uint16
	ppid uint32
	b    []byte
}

// end is one started Transport with what it received.
type end struct {
	tr    backend.Transport
	msgs  chan msg
	done  chan error
	calls atomic.Int64
	// block, when non-nil, stalls fn until closed (flow control tests).
	block chan struct{}
	// overlap detects concurrent fn calls for one stream.
	mu      sync.Mutex
	inFn    map[uint16]bool
	overlap atomic.Bool
}

func start(tr backend.Transport, block chan struct{}) *end {
	e := &end{tr: tr, msgs: make(chan msg, 4096), done: make(chan error, 2), block: block, inFn: map[uint16]bool{}}
	tr.Start(func(sid uint16, ppid uint32, b []byte) {
		e.calls.Add(1)
		e.mu.Lock()
		if e.inFn[sid] {
			e.overlap.Store(true)
		}
		e.inFn[sid] = true
		e.mu.Unlock()
		if e.block != nil {
			<-e.block
		}
		select {
		case e.msgs <- msg{sid, ppid, append([]byte(nil), b...)}:
		default:
		}
		e.mu.Lock()
		e.inFn[sid] = false
		e.mu.Unlock()
	}, func(err error) { e.done <- err })
	return e
}

func (e *end) next(t *testing.T) msg {
	t.Helper()
	select { // what was delivered before done comes first
	case m := <-e.msgs:
		return m
	default:
	}
	select {
	case m := <-e.msgs:
		return m
	case err := <-e.done:
		select { // delivered just before done
		case m := <-e.msgs:
			e.done <- err
			return m
		default:
		}
		t.Fatalf("association ended while a message was expected: %v", err)
	case <-time.After(timeout):
		t.Fatal("no message within the timeout")
	}
	return msg{}
}

func (e *end) waitDone(t *testing.T) error {
	t.Helper()
	select {
	case err := <-e.done:
		return err
	case <-time.After(timeout):
		t.Fatal("done was not called within the timeout")
	}
	return nil
}

func pair(t *testing.T, mk makePair) (c, s *end) {
	t.Helper()
	ct, st := mk(t)
	c, s = start(ct, nil), start(st, nil)
	t.Cleanup(func() {
		_ = c.tr.Abort()
		_ = s.tr.Abort()
	})
	return c, s
}

func testIdentity(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	if c.tr.NumStreams() < 8 || c.tr.NumStreams() != s.tr.NumStreams() {
		t.Fatalf("NumStreams: client %d, server %d: want equal, >= 8 (RFC 5043 §8)", c.tr.NumStreams(), s.tr.NumStreams())
	}
	for _, e := range []*end{c, s} {
		if e.tr.Kind() == "" || e.tr.LocalAddr() == nil || e.tr.RemoteAddr() == nil {
			t.Errorf("Kind %q, LocalAddr %v, RemoteAddr %v: want all set", e.tr.Kind(), e.tr.LocalAddr(), e.tr.RemoteAddr())
		}
		if m := e.tr.MaxMessage(); m < iwarp.SCTPMinMULPDU+4 {
			t.Errorf("MaxMessage %d below what RFC 5043 §9 needs (%d)", m, iwarp.SCTPMinMULPDU+4)
		}
		if ind, ok := e.tr.PeerAdaptation(); ok && ind != backend.AdaptationIndicationDDP {
			t.Errorf("PeerAdaptation %#x, want %#x (RFC 5043 §5.1)", ind, backend.AdaptationIndicationDDP)
		}
	}
}

// testMessages: every message arrives whole with its stream and PPID, parts
// concatenated, in both directions, and fn never overlaps for one stream.
func testMessages(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	const perStream = 50
	type key struct {
		sid uint16
		n   int
	}
	for _, dir := range []struct {
		name     string
		from, to *end
	}{{"client to server", c, s}, {"server to client", s, c}} {
		want := map[key]msg{}
		for i := 0; i < perStream; i++ {
			for sid := uint16(0); sid < 8; sid++ {
				ppid := backend.PPIDSegment
				if i%7 == 0 {
					ppid = backend.PPIDControl
				}
				body := bytes.Repeat([]byte{byte(sid), byte(i)}, 10+i*13)
				hdr := []byte(fmt.Sprintf("%02d:%03d:", sid, i))
				if err := dir.from.tr.WriteMsg(sid, ppid, hdr, nil, body); err != nil {
					t.Fatalf("%s: WriteMsg(%d): %v", dir.name, sid, err)
				}
				want[key{sid, i}] = msg{sid, ppid, append(hdr, body...)}
			}
		}
		for len(want) > 0 {
			m := dir.to.next(t)
			var sid, i int
			if _, err := fmt.Sscanf(string(m.b[:7]), "%02d:%03d:", &sid, &i); err != nil {
				t.Fatalf("%s: unexpected message %q", dir.name, m.b[:min(len(m.b), 16)])
			}
			w, ok := want[key{uint16(sid), i}]
			if !ok {
				t.Fatalf("%s: message %d on stream %d delivered twice", dir.name, i, sid)
			}
			if m.sid != w.sid || m.ppid != w.ppid || !bytes.Equal(m.b, w.b) {
				t.Fatalf("%s: message %d: got stream %d PPID %d %d octets, want stream %d PPID %d %d octets",
					dir.name, i, m.sid, m.ppid, len(m.b), w.sid, w.ppid, len(w.b))
			}
			delete(want, key{uint16(sid), i})
		}
	}
	if c.overlap.Load() || s.overlap.Load() {
		t.Error("fn called concurrently for one stream")
	}
}

// testMoreWriter: a backend.MoreWriter delivers what WriteMsgMore held,
// in order, after a WriteMsg or a Flush (nothing is lost for want of a
// following message); Flush with nothing held is harmless. A backend that
// is no MoreWriter has nothing to show here.
func testMoreWriter(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	mw, ok := c.tr.(backend.MoreWriter)
	if !ok {
		return // the adaptation then sends every segment with WriteMsg
	}
	if err := mw.Flush(); err != nil {
		t.Fatalf("Flush with nothing held: %v", err)
	}
	for round, last := range []string{"write", "flush"} {
		for i := range 3 {
			b := []byte(fmt.Sprintf("%d:%d:held", round, i))
			if err := mw.WriteMsgMore(1, backend.PPIDSegment, b); err != nil {
				t.Fatalf("WriteMsgMore: %v", err)
			}
		}
		n := 3
		var err error
		if last == "write" {
			n = 4
			err = c.tr.WriteMsg(1, backend.PPIDSegment, []byte(fmt.Sprintf("%d:3:last", round)))
		} else {
			err = mw.Flush()
		}
		if err != nil {
			t.Fatalf("%s: %v", last, err)
		}
		for i := range n {
			if m := s.next(t); !bytes.HasPrefix(m.b, []byte(fmt.Sprintf("%d:%d:", round, i))) {
				t.Errorf("%s: message %d: %q", last, i, m.b)
			}
		}
	}
}

// testLargeMessage: the largest DDP segment with headers (64 KiB + 64)
// arrives whole when the backend accepts it; one of at most MaxMessage
// octets is never refused.
func testLargeMessage(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	small := bytes.Repeat([]byte{0xA5}, c.tr.MaxMessage())
	if err := c.tr.WriteMsg(1, backend.PPIDSegment, small); err != nil {
		t.Fatalf("WriteMsg of MaxMessage (%d) octets: %v", len(small), err)
	}
	if m := s.next(t); !bytes.Equal(m.b, small) {
		t.Fatalf("MaxMessage-sized message: got %d octets, want %d", len(m.b), len(small))
	}
	big := make([]byte, 64<<10+64)
	for i := range big {
		big[i] = byte(i * 7)
	}
	err := c.tr.WriteMsg(2, backend.PPIDSegment, big)
	if err != nil {
		if !errors.Is(err, llp.ErrSegmentTooLarge) {
			t.Fatalf("a message above MaxMessage is either sent or refused with llp.ErrSegmentTooLarge, got %v", err)
		}
		return
	}
	if m := s.next(t); !bytes.Equal(m.b, big) {
		t.Fatalf("64 KiB message: got %d octets, want %d intact", len(m.b), len(big))
	}
}

func testStreamRange(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	n := uint16(c.tr.NumStreams())
	if err := c.tr.WriteMsg(n, backend.PPIDSegment, []byte("x")); !errors.Is(err, backend.ErrStreamRange) {
		t.Errorf("WriteMsg on stream %d of %d: got %v, want ErrStreamRange", n, n, err)
	}
	if err := c.tr.ResetStream(n); !errors.Is(err, backend.ErrStreamRange) {
		t.Errorf("ResetStream(%d) of %d: got %v, want ErrStreamRange", n, n, err)
	}
	if err := c.tr.WriteMsg(n-1, backend.PPIDSegment, []byte("last")); err != nil {
		t.Fatalf("the association carries on: WriteMsg on the last stream: %v", err)
	}
	if m := s.next(t); m.sid != n-1 || string(m.b) != "last" {
		t.Fatalf("got stream %d %q, want stream %d \"last\"", m.sid, m.b, n-1)
	}
}

func testEmptyMessage(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	for _, parts := range [][][]byte{nil, {nil, {}}} {
		if err := c.tr.WriteMsg(0, backend.PPIDSegment, parts...); !errors.Is(err, backend.ErrEmptyMessage) {
			t.Errorf("WriteMsg of no octets: got %v, want ErrEmptyMessage (RFC 9260 §6.2)", err)
		}
	}
	if err := c.tr.WriteMsg(0, backend.PPIDSegment, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if m := s.next(t); string(m.b) != "after" {
		t.Fatalf("got %q", m.b)
	}
}

// testGracefulClose: every message written before Close reaches the peer,
// then the peer's done(nil); afterwards both ends refuse writes with
// ErrAssociationClosed.
func testGracefulClose(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	const n = 200
	payload := bytes.Repeat([]byte{1}, 4000)
	for i := 0; i < n; i++ {
		if err := c.tr.WriteMsg(uint16(i%4), backend.PPIDSegment, payload); err != nil {
			t.Fatalf("WriteMsg %d: %v", i, err)
		}
	}
	if err := c.tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i := 0; i < n; i++ {
		if m := s.next(t); len(m.b) != len(payload) {
			t.Fatalf("message %d: %d octets", i, len(m.b))
		}
	}
	if err := s.waitDone(t); err != nil {
		t.Errorf("peer's done after a graceful shutdown: got %v, want nil", err)
	}
	for _, e := range []*end{c, s} {
		if err := e.tr.WriteMsg(0, backend.PPIDSegment, []byte("late")); !errors.Is(err, backend.ErrAssociationClosed) || !errors.Is(err, llp.ErrClosed) {
			t.Errorf("%s: WriteMsg after shutdown: got %v, want ErrAssociationClosed (llp.ErrClosed)", e.tr.Kind(), err)
		}
	}
}

// testCrossedClose: both ends Close at about the same time, as the RDMA
// adaptation does when the last stream of an association ends (RFC 5040
// §7), the peer first by a few milliseconds or together. The SHUTDOWNs
// cross or one answers the other (RFC 9260 §9.2): both Closes return
// promptly, far within any stack's shutdown bound, and both ends see a
// graceful end.
func testCrossedClose(t *testing.T, mk makePair) {
	const prompt = 3 * time.Second
	for _, lead := range []time.Duration{0, 2 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond} {
		c, s := pair(t, mk)
		if err := c.tr.WriteMsg(0, backend.PPIDSegment, []byte("x")); err != nil {
			t.Fatal(err)
		}
		s.next(t)
		if err := s.tr.WriteMsg(0, backend.PPIDSegment, []byte("y")); err != nil {
			t.Fatal(err)
		}
		c.next(t)
		peer := make(chan time.Duration, 1)
		go func() {
			start := time.Now()
			_ = s.tr.Close()
			peer <- time.Since(start)
		}()
		time.Sleep(lead)
		start := time.Now()
		_ = c.tr.Close()
		if d := time.Since(start); d > prompt {
			t.Errorf("peer first by %v: local Close took %v", lead, d)
		}
		select {
		case d := <-peer:
			if d > prompt {
				t.Errorf("peer first by %v: the peer's Close took %v", lead, d)
			}
		case <-time.After(timeout):
			t.Fatalf("peer first by %v: the peer's Close did not return", lead)
		}
		for _, e := range []*end{c, s} {
			if err := e.waitDone(t); err != nil {
				t.Errorf("peer first by %v: %s's done after crossed graceful closes: %v, want nil", lead, e.tr.Kind(), err)
			}
		}
	}
}

func testAbort(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	if err := c.tr.WriteMsg(0, backend.PPIDSegment, []byte("before")); err != nil {
		t.Fatal(err)
	}
	s.next(t)
	if err := c.tr.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := s.waitDone(t); err == nil {
		t.Error("peer's done after an ABORT: got nil, want the cause")
	}
	deadline := time.Now().Add(timeout)
	for {
		err := s.tr.WriteMsg(0, backend.PPIDSegment, []byte("x"))
		if errors.Is(err, backend.ErrAssociationClosed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("WriteMsg on the aborted peer: got %v, want ErrAssociationClosed", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.tr.WriteMsg(0, backend.PPIDSegment, []byte("x")); !errors.Is(err, backend.ErrAssociationClosed) {
		t.Errorf("WriteMsg after Abort: got %v, want ErrAssociationClosed", err)
	}
	if err := c.tr.ResetStream(0); !errors.Is(err, backend.ErrAssociationClosed) {
		t.Errorf("ResetStream after Abort: got %v, want ErrAssociationClosed", err)
	}
}

// testAbortUnblocksWriter: a writer blocked by flow control (the peer's fn
// does not return) gets ErrAssociationClosed when its end aborts.
func testAbortUnblocksWriter(t *testing.T, mk makePair) {
	ct, st := mk(t)
	block := make(chan struct{})
	c, s := start(ct, nil), start(st, block)
	defer func() {
		close(block) // Abort waits for a running fn to return
		_ = s.tr.Abort()
	}()
	payload := make([]byte, min(c.tr.MaxMessage(), 8000))
	errc := make(chan error, 1)
	go func() {
		for {
			if err := c.tr.WriteMsg(3, backend.PPIDSegment, payload); err != nil {
				errc <- err
				return
			}
		}
	}()
	// Let the writer fill every buffer on the way and block.
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-errc:
		t.Fatalf("writer failed before the Abort: %v", err)
	default:
	}
	if err := c.tr.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, backend.ErrAssociationClosed) {
			t.Errorf("blocked writer: got %v, want ErrAssociationClosed", err)
		}
	case <-time.After(timeout):
		t.Fatal("a writer blocked on flow control did not return after Abort")
	}
}

// testNoCallbackAfterClose: once Close or Abort returned, fn is not called
// and done is called exactly once.
func testNoCallbackAfterClose(t *testing.T, mk makePair) {
	for _, abort := range []bool{false, true} {
		c, s := pair(t, mk)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the peer keeps sending
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if s.tr.WriteMsg(5, backend.PPIDSegment, []byte("flood")) != nil {
					return
				}
			}
		}()
		c.next(t)
		var err error
		if abort {
			err = c.tr.Abort()
		} else {
			err = c.tr.Close()
		}
		if err != nil && !errors.Is(err, llp.ErrClosed) && !errors.Is(err, llp.ErrAborted) {
			t.Logf("close (abort %t): %v", abort, err)
		}
		after := c.calls.Load()
		time.Sleep(300 * time.Millisecond)
		if got := c.calls.Load(); got != after {
			t.Errorf("abort %t: fn called %d times after it returned", abort, got-after)
		}
		close(stop)
		wg.Wait()
		_ = c.waitDone(t)
		select {
		case err := <-c.done:
			t.Errorf("abort %t: done called twice (second: %v)", abort, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// testResetStream: after ResetStream on both ends a stream identifier
// carries messages again (the adaptation's reuse after a session, RFC 5043
// §6.6); other streams are not affected.
func testResetStream(t *testing.T, mk makePair) {
	c, s := pair(t, mk)
	if err := c.tr.WriteMsg(6, backend.PPIDSegment, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if m := s.next(t); string(m.b) != "one" {
		t.Fatalf("got %q", m.b)
	}
	if err := c.tr.ResetStream(6); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("ResetStream (client): %v", err)
	}
	if err := s.tr.ResetStream(6); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("ResetStream (server): %v", err)
	}
	if err := c.tr.WriteMsg(7, backend.PPIDSegment, []byte("other")); err != nil {
		t.Fatalf("another stream after the reset: %v", err)
	}
	if m := s.next(t); m.sid != 7 || string(m.b) != "other" {
		t.Fatalf("got stream %d %q", m.sid, m.b)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := c.tr.WriteMsg(6, backend.PPIDSegment, []byte("two"))
		if err == nil {
			break
		}
		if !errors.Is(err, backend.ErrStreamInUse) && !errors.Is(err, llp.ErrClosed) || time.Now().After(deadline) {
			t.Fatalf("WriteMsg on the reset stream: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := s.next(t); m.sid != 6 || string(m.b) != "two" {
		t.Fatalf("after the reset: got stream %d %q, want stream 6 \"two\"", m.sid, m.b)
	}
}

// Establish runs accept and dial concurrently and returns the two ends of
// the association they set up, for use in a makePair. It fails t if either
// fails, aborting the end that succeeded.
func Establish(t *testing.T, accept, dial func(ctx context.Context) (backend.Transport, error)) (client, server backend.Transport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	type res struct {
		tr  backend.Transport
		err error
	}
	acc := make(chan res, 1)
	go func() { tr, err := accept(ctx); acc <- res{tr, err} }()
	c, err := dial(ctx)
	if err != nil {
		cancel()
		if r := <-acc; r.err == nil {
			_ = r.tr.Abort()
		}
		t.Fatalf("dial: %v", err)
	}
	r := <-acc
	if r.err != nil {
		_ = c.Abort()
		t.Fatalf("accept: %v", r.err)
	}
	return c, r.tr
}
