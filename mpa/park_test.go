package mpa

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/llp"
)

// parkedNow reports whether c's receive goroutine is parked.
func parkedNow(c *Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parked
}

func idlePair(t *testing.T, idle time.Duration) (cli, srv *Conn, rc, rs *recorder) {
	t.Helper()
	cli, srv = pair(t, &Config{ReaderIdle: idle}, &Config{ReaderIdle: idle})
	rc, rs = newRecorder(), newRecorder()
	cli.Start(rc)
	srv.Start(rs)
	return cli, srv, rc, rs
}

// TestPark_IdleConnectionHoldsNoReader: a connection with nothing to read
// for ReaderIdle parks at both ends (no receive goroutine, no receive
// buffer: 64 idle connections fall back to the goroutines there were
// before them), and what arrives afterwards, small or an FPDU of the
// largest size, is delivered in order as before; it parks again.
func TestPark_IdleConnectionHoldsNoReader(t *testing.T) {
	const n = 64
	g0 := runtime.NumGoroutine()
	type end struct {
		c *Conn
		r *recorder
	}
	var ends [][2]end
	for range n {
		cli, srv, rc, rs := idlePair(t, 20*time.Millisecond)
		ends = append(ends, [2]end{{cli, rc}, {srv, rs}})
	}
	for round := range 3 {
		for _, e := range ends {
			require.NoError(t, e[0].c.SendSegment([]byte{1, 2}, []byte(fmt.Sprint("to server ", round))))
			require.NoError(t, e[1].c.SendSegment([]byte{3, 4}, []byte(fmt.Sprint("to client ", round))))
		}
		for _, e := range ends {
			assert.Equal(t, fmt.Sprint("\x01\x02to server ", round), string(e[1].r.next(t)))
			assert.Equal(t, fmt.Sprint("\x03\x04to client ", round), string(e[0].r.next(t)))
		}
		require.Eventually(t, func() bool {
			for _, e := range ends {
				if !parkedNow(e[0].c) || !parkedNow(e[1].c) {
					return false
				}
			}
			return true
		}, 5*time.Second, 5*time.Millisecond, "round %d: every end parks", round)
		for _, e := range ends {
			assert.Zero(t, e[0].c.rx.size.Load(), "a parked end holds no receive buffer")
		}
		assert.Less(t, runtime.NumGoroutine(), g0+8, "round %d: %d idle connections hold no receive goroutine", round, n)
	}
	cli, srv := ends[0][0], ends[0][1]
	big := bytes.Repeat([]byte{0x5A}, cli.c.MULPDU()-2)
	require.NoError(t, cli.c.SendSegment([]byte{9, 9}, big))
	assert.Equal(t, append([]byte{9, 9}, big...), srv.r.next(t))
	assert.GreaterOrEqual(t, srv.c.parkCount(), uint64(3))
}

// TestPark_PeerCloseAndAbortWhileParked: a parked end still sees the
// peer's FIN (HandleClosed(nil), the graceful close of RFC 5044 §7.2), its
// own Close completes once the peer closes too, and an Abort of a parked
// end reports llp.ErrAborted: the receive goroutine comes back for each.
func TestPark_PeerCloseAndAbortWhileParked(t *testing.T) {
	cli, srv, rc, rs := idlePair(t, 10*time.Millisecond)
	require.Eventually(t, func() bool { return parkedNow(cli) && parkedNow(srv) }, 5*time.Second, time.Millisecond)
	require.NoError(t, cli.Close())
	assert.NoError(t, rs.end(t), "the server saw the client's FIN while parked")
	require.NoError(t, srv.Close())
	assert.NoError(t, rc.end(t), "the client's parked reader came back for Close and saw the server's FIN")
	<-cli.Done()
	<-srv.Done()

	cli, srv, rc, _ = idlePair(t, 10*time.Millisecond)
	require.Eventually(t, func() bool { return parkedNow(cli) && parkedNow(srv) }, 5*time.Second, time.Millisecond)
	require.NoError(t, cli.Abort())
	assert.ErrorIs(t, rc.end(t), llp.ErrAborted)
	select {
	case <-cli.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("an aborted parked end did not finish")
	}
}

// TestPark_CloseTimeoutStillBounds: Close of a parked end whose peer never
// closes ends after Config.CloseTimeout with the connection-lost error, as
// without parking (the idle deadline does not stand in for it, nor cut it
// short).
func TestPark_CloseTimeoutStillBounds(t *testing.T) {
	cli, srv := pair(t, &Config{ReaderIdle: 5 * time.Millisecond, CloseTimeout: 300 * time.Millisecond}, &Config{ReaderIdle: -1})
	rc, rs := newRecorder(), newRecorder()
	cli.Start(rc)
	srv.Start(rs)
	require.Eventually(t, func() bool { return parkedNow(cli) }, 5*time.Second, time.Millisecond)
	assert.False(t, parkedNow(srv), "ReaderIdle < 0: never parks")
	start := time.Now()
	require.NoError(t, cli.Close())
	err := rc.end(t)
	assert.ErrorIs(t, err, ErrConnectionLost)
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "not cut short by an idle deadline")
	assert.NoError(t, rs.end(t), "the peer saw the FIN")
}

// TestPark_Race: with a 1 ms idle time, messages in both directions with
// gaps around it park and wake the readers thousands of times, also in
// the middle of FPDUs (a writer that sends an FPDU in two halves with a
// pause between): every segment arrives once, in order.
func TestPark_Race(t *testing.T) {
	cli, srv, rc, rs := idlePair(t, time.Millisecond)
	const msgs = 400
	var wg sync.WaitGroup
	for _, e := range []struct {
		c *Conn
	}{{cli}, {srv}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range msgs {
				if err := e.c.SendSegment([]byte{byte(i >> 8), byte(i)}, bytes.Repeat([]byte{byte(i)}, i*37%3000)); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(i%4) * 500 * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	for i := range msgs {
		for _, r := range []*recorder{rc, rs} {
			got := r.next(t)
			require.Equal(t, []byte{byte(i >> 8), byte(i)}, got[:2], "segment %d", i)
			require.Len(t, got, 2+i*37%3000)
		}
	}
	assert.Positive(t, cli.parkCount())
	assert.Positive(t, srv.parkCount())
}

// TestPark_DataWhileParking: an FPDU that arrives after the reader decided
// to park (its idle period passed with nothing read) but before it is
// registered with the poller is delivered: the poller reports a socket
// that is readable when registered (level-triggered), so the reader comes
// back for it at once. The window is forced: the peer sends while the
// parking reader waits in it, until the octets are in its socket.
func TestPark_DataWhileParking(t *testing.T) {
	cli, srv, _, rs := idlePair(t, 20*time.Millisecond)
	require.NoError(t, cli.SendSegment([]byte{1, 2}, []byte("first")))
	assert.Equal(t, "\x01\x02first", string(rs.next(t)))

	var fired atomic.Bool
	hookErr := make(chan error, 1)
	hook := func(c *Conn) {
		if c != srv || !fired.CompareAndSwap(false, true) {
			return
		}
		err := cli.SendSegment([]byte{3, 4}, []byte("raced the parking"))
		if err == nil {
			err = waitReadable(c, 5*time.Second)
		}
		hookErr <- err
	}
	testBeforePark.Store(&hook)
	t.Cleanup(func() { testBeforePark.Store(nil) })

	select {
	case err := <-hookErr:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the server's reader never parked")
	}
	assert.Equal(t, "\x03\x04raced the parking", string(rs.next(t)), "delivered by the reader the poller restarted")
	require.Eventually(t, func() bool { return parkedNow(srv) }, 5*time.Second, time.Millisecond, "and it parks again")
	assert.GreaterOrEqual(t, srv.parkCount(), uint64(2))
}

// waitReadable waits until c's socket has octets to read.
func waitReadable(c *Conn, d time.Duration) error {
	var perr error
	ready := false
	if err := c.raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(d/time.Millisecond))
		ready, perr = n == 1 && fds[0].Revents&unix.POLLIN != 0, err
	}); err != nil {
		return err
	}
	if perr != nil {
		return perr
	}
	if !ready {
		return fmt.Errorf("nothing arrived in %v", d)
	}
	return nil
}
