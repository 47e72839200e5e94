package sctp

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type rxRec struct {
	mu   sync.Mutex
	msgs []rxCopy
	got  chan struct{}
	done chan error
}

type rxCopy struct {
	sid  uint16
	ppid uint32
	b    []byte
}

func newRec() *rxRec { return &rxRec{got: make(chan struct{}, 1<<16), done: make(chan error, 1)} }

func (r *rxRec) fn(sid uint16, ppid uint32, b []byte) {
	r.mu.Lock()
	r.msgs = append(r.msgs, rxCopy{sid, ppid, bytes.Clone(b)})
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *rxRec) wait(t *testing.T, n int) []rxCopy {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		if len(r.msgs) >= n {
			out := append([]rxCopy(nil), r.msgs...)
			r.mu.Unlock()
			return out
		}
		r.mu.Unlock()
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("waited for %d messages", n)
		}
	}
}

func (r *rxRec) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no end")
		return nil
	}
}

// connected returns a dialed and an accepted association over loopback,
// not started, aborted at the end of the test.
func connected(t *testing.T, cfg *Config) (cli, srv *Association) {
	t.Helper()
	l, err := Listen("udp4", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acc := make(chan *Association, 1)
	go func() {
		a, err := l.Accept(ctx)
		assert.NoError(t, err)
		acc <- a
	}()
	cli, err = Dial(ctx, "udp4", l.Addr().String(), cfg)
	require.NoError(t, err)
	srv = <-acc
	require.NotNil(t, srv)
	t.Cleanup(func() { _ = cli.Abort(); _ = srv.Abort() })
	waitPLPMTUD(t, cli, srv)
	return cli, srv
}

// waitPLPMTUD waits until RFC 8899 probing of each association is done
// (two round trips over loopback), so that a test sees the packet size it
// runs at, and no probe among its packets.
func waitPLPMTUD(t *testing.T, as ...*Association) {
	t.Helper()
	for _, a := range as {
		require.Eventually(t, func() bool {
			s := a.Stats().PLPMTUD.State
			return s == "off" || s == "search-complete"
		}, 10*time.Second, time.Millisecond, "PLPMTUD: %+v", a.Stats().PLPMTUD)
	}
}

// pair returns a dialed and an accepted association over loopback.
func pair(t *testing.T, cfg *Config) (cli, srv *Association, cr, sr *rxRec) {
	t.Helper()
	cli, srv = connected(t, cfg)
	cr, sr = newRec(), newRec()
	cli.Start(cr.fn, func(err error) { cr.done <- err })
	srv.Start(sr.fn, func(err error) { sr.done <- err })
	return cli, srv, cr, sr
}

func TestAssociation_EstablishExchangeClose(t *testing.T) {
	cli, srv, cr, sr := pair(t, nil)
	st := srv.Stats()
	ad, ok := st.PeerAdaptation, st.HasPeerAdaptation
	assert.True(t, ok)
	assert.EqualValues(t, 1, ad, "RFC 5043 §5.1: the DDP indication")
	out, in := cli.Stats().OutStreams, cli.Stats().InStreams
	assert.Equal(t, defaultStreams, out)
	assert.Equal(t, defaultStreams, in)

	require.NoError(t, cli.WriteMsg(3, 16, []byte("hello "), []byte("world")))
	require.NoError(t, srv.WriteMsg(7, 17, []byte("back")))
	got := sr.wait(t, 1)
	assert.Equal(t, rxCopy{3, 16, []byte("hello world")}, got[0])
	got = cr.wait(t, 1)
	assert.Equal(t, rxCopy{7, 17, []byte("back")}, got[0])

	// Large and fragmented messages arrive whole.
	big := bytes.Repeat([]byte("0123456789abcdef"), 70000/16)
	require.NoError(t, cli.WriteMsg(1, 16, big))
	got = sr.wait(t, 2)
	assert.Equal(t, big, got[1].b)

	require.NoError(t, cli.Close())
	assert.NoError(t, sr.end(t), "graceful close reaches the peer as nil")
	assert.NoError(t, cr.end(t))
	assert.Equal(t, stateClosed, srv.Stats().State)
	assert.ErrorIs(t, cli.WriteMsg(0, 16, []byte("x")), ErrClosed)
}

func TestAssociation_Errors(t *testing.T) {
	cli, srv, _, sr := pair(t, &Config{Streams: 8})
	assert.ErrorIs(t, cli.WriteMsg(8, 16, []byte("x")), ErrStreamRange)
	assert.ErrorIs(t, cli.WriteMsg(0, 16), ErrEmptyMessage)
	require.NoError(t, cli.Abort())
	err := sr.end(t)
	assert.ErrorIs(t, err, ErrAborted)
	var ae *AbortError
	require.True(t, errors.As(err, &ae))
	assert.False(t, ae.Local)
	assert.ErrorIs(t, srv.WriteMsg(0, 16, []byte("x")), ErrClosed)
}

func TestAssociation_Bulk(t *testing.T) {
	cli, _, _, sr := pair(t, nil)
	const n = 2000
	msg := make([]byte, 60000)
	go func() {
		for i := 0; i < n; i++ {
			msg[0] = byte(i)
			if err := cli.WriteMsg(uint16(i%16), 16, msg); err != nil {
				return
			}
		}
	}()
	got := sr.wait(t, n)
	for i, m := range got {
		assert.Len(t, m.b, len(msg))
		_ = i
	}
	st := cli.Stats()
	t.Logf("stats %+v", st)
}

// TestAssociation_IdleMemory: an established, idle association pair (both
// ends, the dialer's socket and read buffer included) holds well under
// 512 KiB of heap, so that a listener's association cap bounds its
// memory (defaultMaxAssociations × this).
func TestAssociation_IdleMemory(t *testing.T) {
	l, err := Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 40
	var before, after runtime.MemStats
	// Earlier tests' associations end asynchronously: collect until the
	// heap stops shrinking before taking the baseline.
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 20 {
		time.Sleep(20 * time.Millisecond)
		prev := before.HeapAlloc
		runtime.GC()
		runtime.ReadMemStats(&before)
		if before.HeapAlloc >= prev {
			break
		}
	}
	as := make([]*Association, 0, 2*n)
	for range n {
		acc := make(chan *Association, 1)
		go func() { a, _ := l.Accept(ctx); acc <- a }()
		c, err := Dial(ctx, "udp4", l.Addr().String(), nil)
		require.NoError(t, err)
		as = append(as, c, <-acc)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n / 1024
	t.Logf("heap per idle association pair: %.0f KiB", per)
	assert.Less(t, per, 512.0)
	for _, a := range as {
		require.NotNil(t, a)
		_ = a.Abort()
	}
}

// TestWriteMsgFairUnderBackpressure: writers that wait for send-buffer
// space are served in the order they arrived once the first has waited
// writerPatience, so none starves: 64 streams' writers contending for a
// small send buffer each wait at most a few milliseconds per message,
// and when the first writer is done every other one has sent most of
// its messages too.
func TestWriteMsgFairUnderBackpressure(t *testing.T) {
	cli, _, _, sr := pair(t, &Config{SendBuffer: 64 << 10})
	const writers, msgs = 64, 100
	var mu sync.Mutex
	sent := make([]int, writers)
	var firstDone []int
	// Fairness by order, not by time (a loaded host stretches any wall-clock
	// bound): overtaken counts the messages of other writers that completed
	// while one WriteMsg waited. Waiting writers are granted space in turn,
	// so a wait sees each other writer finish a few messages (without turns a
	// writer can be overtaken without bound, thousands here). A goroutine
	// preempted between reading the counter and calling WriteMsg counts what
	// completed meanwhile too, and one SACK can free room for a burst of
	// writers: the bound leaves room for both.
	var done atomic.Int64
	var overtaken int64
	var wg, ready sync.WaitGroup
	start := make(chan struct{})
	buf := make([]byte, 8<<10)
	for w := range writers {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			// All writers start together: on a loaded host one not yet
			// scheduled when another finished counted as left behind.
			ready.Done()
			<-start
			for range msgs {
				before := done.Load()
				if !assert.NoError(t, cli.WriteMsg(uint16(w), 16, buf)) {
					return
				}
				others := done.Add(1) - before - 1
				mu.Lock()
				overtaken = max(overtaken, others)
				sent[w]++
				if sent[w] == msgs && firstDone == nil {
					firstDone = append([]int(nil), sent...)
				}
				mu.Unlock()
			}
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	sr.wait(t, writers*msgs)
	// A writer whose thread the host deschedules (a loaded CI machine)
	// sends nothing meanwhile, whatever the turns: one of 40 runs beside
	// two busy loops had one writer at 18. Without turns many fall behind,
	// so the fifth fewest is the measure.
	slices.Sort(firstDone)
	least := firstDone[writers/16]
	t.Logf("most messages of others completed during one WriteMsg: %d; when the first writer finished, the fewest sent by a writer: %d, the fifth fewest: %d of %d", overtaken, firstDone[0], least, msgs)
	assert.GreaterOrEqual(t, least, msgs/3, "writers left behind")
	assert.LessOrEqual(t, overtaken, int64(12*writers), "a writer starved: overtaken by more than twelve messages of every other writer")
}

// TestWriteMsgLargeWriterNotStarvedBySmall: a writer whose message does
// not fit waits while writers of small messages still find room in what
// each SACK frees. Waiting writers are granted in arrival order, and one
// that does not fit holds back those behind it (grantWriters); past
// writerPatience newcomers queue too. So the small writers end up behind
// the large one and its space comes: measured by order, not time, as the
// small messages completed while one large WriteMsg waited (8–15 here,
// against the 24,000 the small writers send in all).
func TestWriteMsgLargeWriterNotStarvedBySmall(t *testing.T) {
	cli, srv := connected(t, &Config{SendBuffer: 64 << 10})
	var got atomic.Int64
	ended := make(chan error, 1)
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	srv.Start(func(uint16, uint32, []byte) { got.Add(1) }, func(err error) { ended <- err })
	const smallWriters, smallMsgs, bigMsgs = 8, 3000, 8
	var small atomic.Int64 // small messages completed
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range smallWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2<<10)
			for range smallMsgs {
				select {
				case <-stop:
					return
				default:
				}
				if !assert.NoError(t, cli.WriteMsg(uint16(1+w), 16, buf)) {
					return
				}
				small.Add(1)
			}
		}()
	}
	big := make([]byte, 48<<10)
	var worst int64
	bigDone := 0
	for range bigMsgs {
		before := small.Load()
		require.NoError(t, cli.WriteMsg(0, 16, big))
		worst = max(worst, small.Load()-before)
		bigDone++
		if small.Load() >= smallWriters*smallMsgs {
			break
		}
	}
	left := smallWriters*smallMsgs - small.Load()
	close(stop)
	wg.Wait()
	t.Logf("large messages sent: %d of %d; small messages completed during one large WriteMsg: at most %d; small left when the large writer finished: %d", bigDone, bigMsgs, worst, left)
	assert.Equal(t, bigMsgs, bigDone, "the large writer finished only after the small writers")
	assert.Positive(t, left, "the small writers were done before the large writer")
	assert.LessOrEqual(t, worst, int64(16*smallWriters), "the large writer was overtaken by more than sixteen messages of every small writer")
	want := small.Load() + int64(bigDone)
	require.Eventually(t, func() bool { return got.Load() == want }, 20*time.Second, 5*time.Millisecond, "every message delivered")
}

// gatedPair is pair with the accepted association's delivery blocked
// until gate is closed, and cfg for both ends.
func gatedPair(t *testing.T, cfg *Config) (cli *Association, gate chan struct{}, sr *rxRec) {
	t.Helper()
	cli, srv := connected(t, cfg)
	gate, sr = make(chan struct{}), newRec()
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	srv.Start(func(sid uint16, ppid uint32, b []byte) { <-gate; sr.fn(sid, ppid, b) }, func(error) {})
	return cli, gate, sr
}

// waitingWriters returns the number of writers waiting for space.
func waitingWriters(a *Association) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.io.writers)
}

// A writer waiting for send-buffer space has not copied its message yet:
// it reserves the space first and copies just before the chunks go (so
// that hundreds of waiting writers hold no buffers, and the octets are
// still in the cache when they are sent). What a waiting writer's caller
// changes in its buffer meanwhile is what the peer receives.
func TestWriteMsgCopiesAfterWaiting(t *testing.T) {
	cli, gate, sr := gatedPair(t, &Config{SendBuffer: 64 << 10, ReceiveBuffer: 64 << 10})
	fill := make([]byte, 16<<10)
	// Fill the peer's window and our send buffer: the peer delivers
	// nothing until the gate opens.
	sent := 0
	for cli.Stats().PeerRwnd > 0 || cli.Stats().Flight == 0 {
		require.NoError(t, cli.WriteMsg(1, 16, fill))
		sent++
		require.Less(t, sent, 64, "the window never closed")
	}
	late := bytes.Repeat([]byte{'a'}, 16<<10)
	errc := make(chan error, 1)
	go func() { errc <- cli.WriteMsg(2, 16, late) }()
	for waitingWriters(cli) == 0 {
		select {
		case err := <-errc:
			// It fitted after all; fill again.
			require.NoError(t, err)
			sent++
			go func() { errc <- cli.WriteMsg(2, 16, late) }()
		case <-time.After(time.Millisecond):
		}
		require.Less(t, sent, 64)
	}
	copy(late, bytes.Repeat([]byte{'b'}, len(late))) // the caller's change while the writer waits
	require.Equal(t, 1, waitingWriters(cli), "still waiting (and mu orders the change before its copy)")
	close(gate)
	require.NoError(t, <-errc)
	got := sr.wait(t, sent+1)
	last := got[len(got)-1]
	assert.Equal(t, uint16(2), last.sid)
	assert.Equal(t, bytes.Repeat([]byte{'b'}, len(late)), last.b, "copied after the wait")
}

// startWriters starts n writers of buf on streams 0..n-1 of cli, each
// writing until WriteMsg fails; the failures come on the channel, and
// accepted counts the messages WriteMsg took.
func startWriters(cli *Association, n int, buf []byte, accepted *atomic.Int64) chan error {
	errc := make(chan error, n)
	for w := range n {
		go func() {
			for {
				if err := cli.WriteMsg(uint16(w), 16, buf); err != nil {
					errc <- err
					return
				}
				accepted.Add(1)
			}
		}()
	}
	return errc
}

// assertNothingReserved: no send-buffer space is held and no writer waits.
func assertNothingReserved(t *testing.T, a *Association) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	assert.Zero(t, a.sndBuffered)
	assert.Empty(t, a.io.writers)
}

// Writers waiting for space when the association is aborted return
// ErrClosed, and no reservation is left behind.
func TestWriteMsgAbortWhileWaiting(t *testing.T) {
	cli, gate, _ := gatedPair(t, &Config{SendBuffer: 64 << 10, ReceiveBuffer: 64 << 10})
	defer close(gate)
	const writers = 8
	var accepted atomic.Int64
	errc := startWriters(cli, writers, make([]byte, 16<<10), &accepted)
	require.Eventually(t, func() bool { return waitingWriters(cli) == writers }, 10*time.Second, time.Millisecond)
	require.NoError(t, cli.Abort())
	for range writers {
		assert.ErrorIs(t, <-errc, ErrClosed)
	}
	assertNothingReserved(t, cli)
}

// Writers waiting for space when the association is closed gracefully
// return ErrClosed with nothing reserved for them: once the peer has
// taken what was queued before the close, the send buffer is empty.
func TestWriteMsgCloseWhileWaiting(t *testing.T) {
	cli, gate, sr := gatedPair(t, &Config{SendBuffer: 64 << 10, ReceiveBuffer: 64 << 10})
	const writers = 8
	var accepted atomic.Int64
	errc := startWriters(cli, writers, make([]byte, 16<<10), &accepted)
	require.Eventually(t, func() bool { return waitingWriters(cli) == writers }, 10*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- cli.Close() }()
	for range writers {
		assert.ErrorIs(t, <-errc, ErrClosed)
	}
	close(gate) // the peer takes what was queued; the SHUTDOWN completes
	require.NoError(t, <-closed)
	sr.wait(t, int(accepted.Load()))
	assertNothingReserved(t, cli)
}
