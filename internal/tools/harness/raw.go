package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// rawPair is a connected raw LLP: messages written by the client are
// delivered to the server, and the echo mode sends them back.
type rawPair interface {
	// throughput moves total octets in messages of size octets from client
	// to server and returns the time until the last one arrived.
	throughput(size int, total int64) (time.Duration, error)
	// reverse is throughput from server to client: the direction of an
	// RDMA Read's data (the responder sends it), and so its baseline.
	reverse(size int, total int64) (time.Duration, error)
	// rtt measures n round trips of size-octet messages and returns the
	// samples.
	rtt(size, n int) ([]time.Duration, error)
	close()
}

// rawSCTP is the raw LLP of a userspace SCTP mode (sctp-pion or
// sctp-native): sctpllp's transport, user messages written with WriteMsg
// on one stream, each at most MaxMessage octets so that, like DDP
// segments, none is fragmented.
type rawSCTP struct {
	name   string
	ln     io.Closer
	cl, sv backend.Transport
	got    atomic.Int64
	want   atomic.Int64
	echo   atomic.Bool
	// back: the client counts what arrives (reverse), instead of taking
	// round-trip samples.
	back   atomic.Bool
	arrive chan struct{}
	// The round-trip run, driven by the client's receive callback: it
	// takes each echo on the goroutine that received it and sends the
	// next message from there, as the RDMA ping-pong's CQ handler does
	// (bench's handled ping-pong); guarded by mu.
	mu      sync.Mutex
	samples []time.Duration
	left    int
	t0      time.Time
	msg     []byte
	rttErr  error
}

// newRawSCTP sets up the raw pair of llp (transport.SCTPPion or
// transport.SCTPNative) on 127.0.0.1; mtu 0 is the mode's default.
func newRawSCTP(ctx context.Context, llp string, mtu int) (*rawSCTP, error) {
	var (
		ln     io.Closer
		addr   string
		accept func(context.Context) (backend.Transport, error)
		dial   func(context.Context) (backend.Transport, error)
	)
	if llp == transport.SCTPNative {
		cfg := native.Config{MTU: mtu}
		l, err := native.Stack(cfg, nil).Listen("127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ln, addr = l, l.Addr().String()
		accept = func(ctx context.Context) (backend.Transport, error) { return l.Accept(ctx) }
		dial = func(ctx context.Context) (backend.Transport, error) { return native.Stack(cfg, nil).Dial(ctx, addr) }
	} else {
		cfg := pion.Config{MTU: mtu}
		l, err := pion.Stack(cfg).Listen("127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ln, addr = l, l.Addr().String()
		accept = func(ctx context.Context) (backend.Transport, error) { return l.Accept(ctx) }
		dial = func(ctx context.Context) (backend.Transport, error) { return pion.Stack(cfg).Dial(ctx, addr) }
	}
	r := &rawSCTP{name: llp, ln: ln, arrive: make(chan struct{}, 1)}
	cl, sv, err := connectPair(ctx, accept, dial)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	r.cl, r.sv = cl, sv
	// The receiver copies each message into memory of its own, as any
	// application of the raw LLP must (b is valid only during the call)
	// and as DDP places each segment into the registered region: the raw
	// figure then bounds the RDMA one. (Counting octets without touching
	// them made the raw receiver so quick that it parked and was woken
	// for every packet, and the raw flow came out slower than the RDMA
	// Write that does the copy: 1.05-1.36 × "raw".)
	svSink, clSink := &rawSink{buf: make([]byte, 128<<10)}, &rawSink{buf: make([]byte, 128<<10)}
	r.sv.Start(func(sid uint16, ppid uint32, b []byte) {
		if r.echo.Load() {
			// Echoed from the receiving goroutine, as the RDMA
			// ping-pong's passive handler answers (WriteMsg copies b).
			_ = r.sv.WriteMsg(1, backend.PPIDSegment, b)
			return
		}
		r.take(svSink, b)
	}, func(error) {})
	r.cl.Start(func(sid uint16, ppid uint32, b []byte) {
		if r.back.Load() {
			r.take(clSink, b)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.left == 0 {
			return
		}
		r.samples = append(r.samples, time.Since(r.t0))
		if r.left--; r.left > 0 {
			r.t0 = time.Now()
			if r.rttErr = r.cl.WriteMsg(1, backend.PPIDSegment, r.msg); r.rttErr == nil {
				return
			}
			r.left = 0
		}
		select {
		case r.arrive <- struct{}{}:
		default:
		}
	}, func(error) {})
	return r, nil
}

// rawSink is the memory a raw receiver copies each message into, as any
// application of the raw LLP must (a callback's b is valid only during the
// call) and as DDP places each segment into the registered region: the raw
// figure then bounds the RDMA one. (Counting octets without touching them
// made the raw receiver so quick that it parked and was woken for every
// packet, and the raw flow came out slower than the RDMA Write that does
// the copy: 1.05-1.36 × "raw".) Used by one receive callback.
type rawSink struct {
	buf []byte
	off int
}

// take copies b into sink and signals arrive once the run's octets are in.
func (r *rawSCTP) take(sink *rawSink, b []byte) {
	if sink.off+len(b) > len(sink.buf) {
		sink.off = 0
	}
	sink.off += copy(sink.buf[sink.off:], b)
	if r.got.Add(int64(len(b))) >= r.want.Load() {
		select {
		case r.arrive <- struct{}{}:
		default:
		}
	}
}

func (r *rawSCTP) throughput(size int, total int64) (time.Duration, error) {
	r.echo.Store(false)
	r.back.Store(false)
	return r.move(r.cl, size, total)
}

func (r *rawSCTP) reverse(size int, total int64) (time.Duration, error) {
	r.echo.Store(false)
	r.back.Store(true)
	defer r.back.Store(false)
	return r.move(r.sv, size, total)
}

// move sends total octets from one end in messages of size and waits for
// the other end's callback to take them all.
func (r *rawSCTP) move(from backend.Transport, size int, total int64) (time.Duration, error) {
	select { // drop a stale arrival signal
	case <-r.arrive:
	default:
	}
	r.got.Store(0)
	r.want.Store(total)
	buf := make([]byte, size)
	chunk := from.MaxMessage()
	// The chunks of one message but the last go as DDP sends the
	// segments of one message, where the stack can hold them for the
	// last (backend.MoreWriter: sctp-native sends them with one system
	// call): the raw flow in its best configuration.
	more, _ := from.(backend.MoreWriter)
	start := time.Now()
	for sent := int64(0); sent < total; sent += int64(size) {
		for off := 0; off < size; off += chunk {
			p := buf[off:min(off+chunk, size)]
			var err error
			if more != nil && off+chunk < size {
				err = more.WriteMsgMore(1, backend.PPIDSegment, p)
			} else {
				err = from.WriteMsg(1, backend.PPIDSegment, p)
			}
			if err != nil {
				return 0, err
			}
		}
	}
	select {
	case <-r.arrive:
	case <-time.After(60 * time.Second):
		return 0, fmt.Errorf("raw %s: %d of %d octets arrived", r.name, r.got.Load(), total)
	}
	return time.Since(start), nil
}

func (r *rawSCTP) rtt(size, n int) ([]time.Duration, error) {
	r.echo.Store(true)
	select { // drop a stale arrival signal
	case <-r.arrive:
	default:
	}
	r.mu.Lock()
	r.samples, r.left, r.msg, r.rttErr = make([]time.Duration, 0, n), n, make([]byte, size), nil
	r.t0 = time.Now()
	err := r.cl.WriteMsg(1, backend.PPIDSegment, r.msg)
	if err != nil {
		r.left = 0
	}
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// The client's callback sends the other n-1; an echo lost stops it.
	timeout := time.Duration(n)*time.Millisecond + 10*time.Second
	select {
	case <-r.arrive:
	case <-time.After(timeout):
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rttErr != nil {
		return nil, r.rttErr
	}
	if len(r.samples) < n {
		r.left = 0
		return nil, fmt.Errorf("raw %s: echo lost after %d of %d round trips", r.name, len(r.samples), n)
	}
	return r.samples, nil
}

func (r *rawSCTP) close() {
	_ = r.cl.Close()
	_ = r.sv.Close()
	_ = r.ln.Close()
}

// rawTCP is the raw LLP of mpa: one loopback TCP connection.
type rawTCP struct {
	cl, sv net.Conn
}

func newRawTCP() (*rawTCP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	cl, err := net.Dial("tcp", ln.Addr().String())
	sv := <-acc
	if err != nil || sv == nil {
		if cl != nil {
			cl.Close()
		}
		return nil, fmt.Errorf("raw tcp: %w", err)
	}
	return &rawTCP{cl: cl, sv: sv}, nil
}

func (r *rawTCP) throughput(size int, total int64) (time.Duration, error) {
	return moveTCP(r.cl, r.sv, size, total)
}

func (r *rawTCP) reverse(size int, total int64) (time.Duration, error) {
	return moveTCP(r.sv, r.cl, size, total)
}

// moveTCP writes total octets to from in writes of size and returns the
// time until to has read them all.
func moveTCP(from, to net.Conn, size int, total int64) (time.Duration, error) {
	done := make(chan error, 1)
	go func() {
		// A large read buffer: the receiver must not be the bottleneck
		// (io.Copy's 32 KiB would halve loopback throughput).
		buf := make([]byte, 1<<20)
		var got int64
		for got < total {
			n, err := to.Read(buf[:min(int64(len(buf)), total-got)])
			got += int64(n)
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	buf := make([]byte, size)
	start := time.Now()
	for sent := int64(0); sent < total; sent += int64(size) {
		if _, err := from.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := <-done; err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func (r *rawTCP) rtt(size, n int) ([]time.Duration, error) {
	done := make(chan error, 1)
	go func() {
		b := make([]byte, size)
		for i := 0; i < n; i++ {
			if _, err := io.ReadFull(r.sv, b); err != nil {
				done <- err
				return
			}
			if _, err := r.sv.Write(b); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b := make([]byte, size)
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := r.cl.Write(b); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(r.cl, b); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
	}
	return out, <-done
}

func (r *rawTCP) close() {
	r.cl.Close()
	r.sv.Close()
}

// connectPair runs accept and dial at once and returns both ends of the
// association; on an error, whichever end was set up is aborted.
func connectPair(ctx context.Context, accept, dial func(context.Context) (backend.Transport, error)) (cl, sv backend.Transport, err error) {
	type res struct {
		t   backend.Transport
		err error
	}
	acc := make(chan res, 1)
	go func() {
		t, err := accept(ctx)
		acc <- res{t, err}
	}()
	cl, err = dial(ctx)
	a := <-acc
	if err != nil || a.err != nil {
		if err == nil {
			_ = cl.Abort()
		}
		if a.err == nil {
			_ = a.t.Abort()
		}
		return nil, nil, errors.Join(err, a.err)
	}
	return cl, a.t, nil
}
