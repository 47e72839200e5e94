package rdmap

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func TestEndpoint_SendRecv_RFC5040_5_3(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	ctx := ctx5(t)
	buf := make([]byte, 100)
	require.NoError(t, p.b.PostRecv(7, buf))
	require.NoError(t, p.b.PostRecv(8, make([]byte, 10)))
	require.NoError(t, p.a.send(ctx, []byte("hello")))
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRSend, Solicited: true}))
	c := poll(t, p.rcqB)
	assert.Equal(t, Completion{WRID: 7, Op: WRRecv, Length: 5, Buf: buf}, c)
	assert.Equal(t, "hello", string(buf[:5]))
	// A zero-length Send consumes a buffer (§5.3) and SE surfaces.
	c = poll(t, p.rcqB)
	assert.Len(t, c.Buf, 10, "the posted buffer")
	assert.Equal(t, Completion{WRID: 8, Op: WRRecv, Solicited: true, Buf: c.Buf}, c)
	c = poll(t, p.cqA)
	assert.Equal(t, Completion{WRID: 1, Op: WRSend}, c)

	// The blocking helper.
	type res struct {
		c   Completion
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := p.a.recvWait(ctx, make([]byte, 8))
		ch <- res{c, err}
	}()
	require.Eventually(t, func() bool { return postedRecvs(p.a) == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, p.b.send(ctx, []byte("back")))
	got := <-ch
	require.NoError(t, got.err)
	assert.Equal(t, 4, got.c.Length)
}

func TestEndpoint_WriteReadAtomic(t *testing.T) {
	var tgt, sink *MR
	tbuf := make([]byte, 1<<16)
	sbuf := make([]byte, 1<<16)
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		tgt, err = p.pdB.Register(tbuf, RemoteWrite|RemoteRead|RemoteAtomic, MROption{BaseTO: 0x1000})
		require.NoError(t, err)
		sink, err = p.pdA.Register(sbuf, LocalWrite)
		require.NoError(t, err)
	})
	ctx := ctx5(t)
	src := bytes.Repeat([]byte("0123456789"), 500)
	require.NoError(t, p.a.write(ctx, src, tgt.STag(), 0x1000+100))
	// RFC 5040 §5.5 rule 12: a Read after a Write sees the Write.
	require.NoError(t, p.a.read(ctx, sink, 7, uint32(len(src)), tgt.STag(), 0x1000+100))
	assert.Equal(t, src, sbuf[7:7+len(src)])
	assert.Equal(t, src, tbuf[100:100+len(src)])

	// Atomics (RFC 7306 §5): 8-aligned target inside the region.
	binary.NativeEndian.PutUint64(tbuf[64:], 40)
	old, err := p.a.fetchAdd(ctx, tgt.STag(), 0x1000+64, 2, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(40), old)
	assert.Equal(t, uint64(42), binary.NativeEndian.Uint64(tbuf[64:]))
	old, err = p.a.cmpSwap(ctx, tgt.STag(), 0x1000+64, 42, ^uint64(0), 7, ^uint64(0))
	require.NoError(t, err)
	assert.Equal(t, uint64(42), old)
	old, err = p.a.cmpSwap(ctx, tgt.STag(), 0x1000+64, 42, ^uint64(0), 9, ^uint64(0))
	require.NoError(t, err)
	assert.Equal(t, uint64(7), old, "compare fails: unchanged")
	old, err = p.a.swap(ctx, tgt.STag(), 0x1000+64, 1234)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), old)
	assert.Equal(t, uint64(1234), binary.NativeEndian.Uint64(tbuf[64:]))

	// Zero-length Read (§5.2.1): no validation of the source, empty response.
	require.NoError(t, p.a.read(ctx, nil, 0, 0, 0xdeadbeef, 0))
	// Zero-length Write.
	require.NoError(t, p.a.write(ctx, nil, tgt.STag(), 0x1000))
}

func TestEndpoint_ImmediateAndWriteImm_RFC7306_6(t *testing.T) {
	var tgt *MR
	tbuf := make([]byte, 64)
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		tgt, err = p.pdB.Register(tbuf, RemoteWrite)
		require.NoError(t, err)
	})
	ctx := ctx5(t)
	for i := range 3 {
		require.NoError(t, p.b.PostRecv(uint64(i), make([]byte, 8)))
	}
	require.NoError(t, p.a.immediate(ctx, 0x0102030405060708, false))
	require.NoError(t, p.a.immediate(ctx, 99, true))
	require.NoError(t, p.a.writeImm(ctx, []byte("written"), tgt.STag(), 3, 0xabc, false))
	c := poll(t, p.rcqB)
	assert.Len(t, c.Buf, 8, "the posted buffer")
	assert.Equal(t, Completion{WRID: 0, Op: wrRecvImm, Imm: 0x0102030405060708, HasImm: true, Buf: c.Buf}, c)
	c = poll(t, p.rcqB)
	assert.Equal(t, Completion{WRID: 1, Op: wrRecvImm, Imm: 99, HasImm: true, Solicited: true, Buf: c.Buf}, c)
	c = poll(t, p.rcqB)
	assert.Equal(t, Completion{WRID: 2, Op: wrRecvImm, Imm: 0xabc, HasImm: true, Buf: c.Buf}, c)
	// The Immediate Data completes after the Write is placed (RFC 7306 §7).
	assert.Equal(t, "written", string(tbuf[3:10]))
}

func TestEndpoint_SendWithInvalidate_RFC5040_5_3(t *testing.T) {
	var mr *MR
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		mr, err = p.pdB.Register(make([]byte, 16), RemoteWrite, MROption{Endpoint: p.b}, MROption{RemoteInvalidate: true})
		require.NoError(t, err)
	})
	ctx := ctx5(t)
	require.NoError(t, p.b.PostRecv(5, make([]byte, 4)))
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRSend, Solicited: true, Invalidate: true, InvalidateSTag: mr.STag(), Local: []byte("inv")}))
	c := poll(t, p.rcqB)
	assert.Len(t, c.Buf, 4, "the posted buffer")
	assert.Equal(t, Completion{WRID: 5, Op: WRRecv, Length: 3, Solicited: true, InvalidatedSTag: mr.STag(), Buf: c.Buf}, c)
	assert.False(t, mr.isValid(), "invalidated before the Send completed")
	assert.Equal(t, Completion{WRID: 1, Op: WRSend, Length: 3}, poll(t, p.cqA))
	_ = ctx
}

// RFC 5040 §5.5 rule 15 and §11.2: completions at the local peer in
// submission order: a Send posted after a Read completes after the Read.
func TestEndpoint_CompletionOrder_RFC5040_5_5_Rule15(t *testing.T) {
	var src, sink *MR
	sbuf := make([]byte, 1<<20)
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		src, err = p.pdB.Register(sbuf, RemoteRead)
		require.NoError(t, err)
		sink, err = p.pdA.Register(make([]byte, 1<<20), LocalWrite)
		require.NoError(t, err)
	})
	for i := range 20 {
		require.NoError(t, p.b.PostRecv(uint64(i), make([]byte, 16)))
	}
	var want []uint64
	for i := range 20 {
		id := uint64(i)
		if i%2 == 0 {
			require.NoError(t, p.a.postSend1(SendWR{ID: id, Op: WRRead, Sink: sink, Length: 1 << 20, RemoteSTag: src.STag()}))
		} else {
			require.NoError(t, p.a.postSend1(SendWR{ID: id, Op: WRSend, Local: []byte("x")}))
		}
		want = append(want, id)
	}
	var got []uint64
	for range 20 {
		c := poll(t, p.cqA)
		require.NoError(t, c.Err)
		got = append(got, c.WRID)
	}
	assert.Equal(t, want, got)
}

// ORD enforced at the requester (RFC 5040 §6.1): never more than ORD
// Read Requests outstanding; the rest wait in the send queue.
func TestEndpoint_ORD_RFC5040_6_1(t *testing.T) {
	var src, sink *MR
	p := newPair(t, EndpointConfig{ORD: 2}, EndpointConfig{IRD: 2}, func(p *pair) {
		var err error
		src, err = p.pdB.Register(make([]byte, 1<<16), RemoteRead)
		require.NoError(t, err)
		sink, err = p.pdA.Register(make([]byte, 1<<16), LocalWrite)
		require.NoError(t, err)
	})
	var mu sync.Mutex
	outstanding, maxOut := 0, 0
	p.pipeA.SetTap(func(seg []byte) {
		if seg[0]&0x80 == 0 && seg[1] == iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadRequest) {
			mu.Lock()
			outstanding++
			maxOut = max(maxOut, outstanding)
			mu.Unlock()
		}
	})
	p.pipeB.SetTap(func(seg []byte) {
		if seg[0]&0x80 != 0 && seg[0]&0x40 != 0 && seg[1] == iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadResponse) {
			mu.Lock()
			outstanding--
			mu.Unlock()
		}
	})
	for i := range 50 {
		require.NoError(t, p.a.postSend1(SendWR{ID: uint64(i), Op: WRRead, Sink: sink, Length: 1 << 16, RemoteSTag: src.STag()}))
	}
	for range 50 {
		require.NoError(t, poll(t, p.cqA).Err)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.LessOrEqual(t, maxOut, 2)
	assert.Greater(t, maxOut, 0)
}

// Random sizes 0..4 MiB, many outstanding operations of every kind,
// MULPDU small and large, with data verification.
func TestEndpoint_EndToEnd_RandomSizes(t *testing.T) {
	for _, mulpdu := range []int{64, 1448, 65536} {
		t.Run("mulpdu", func(t *testing.T) { endToEnd(t, mulpdu) })
	}
}

func endToEnd(t *testing.T, mulpdu int) {
	const region = 4 << 20
	r := rand.New(rand.NewPCG(uint64(mulpdu), 1))
	srcBuf := make([]byte, region)
	fill(r, srcBuf)
	n, maxSize := 16, region
	if mulpdu < 100 {
		n, maxSize = 12, 64<<10
	}
	type op struct {
		kind WorkType
		data []byte // write/send payload
		off  int    // read source offset
		mr   *MR    // write target at B, read sink at A
		buf  []byte // its buffer
		recv []byte // send: B's receive buffer
	}
	ops := make([]op, n)
	var src *MR
	p := newPair(t, EndpointConfig{ORD: 4}, EndpointConfig{IRD: 4}, func(p *pair) {
		var err error
		src, err = p.pdB.Register(srcBuf, RemoteRead)
		require.NoError(t, err)
		for i := range ops {
			size := r.IntN(maxSize + 1)
			if i < 3 {
				size = 0 // zero-length Write, Read and Send
			}
			o := &ops[i]
			switch i % 3 {
			case 0:
				o.kind = WRWrite
				o.data = make([]byte, size)
				fill(r, o.data)
				o.buf = make([]byte, size+16)
				o.mr, err = p.pdB.Register(o.buf, RemoteWrite, MROption{BaseTO: uint64(r.Uint32())})
				require.NoError(t, err)
			case 1:
				o.kind = WRRead
				o.off = r.IntN(region - size + 1)
				o.buf = make([]byte, size)
				o.mr, err = p.pdA.Register(o.buf, LocalWrite)
				require.NoError(t, err)
			case 2:
				o.kind = WRSend
				o.data = make([]byte, min(size, 1<<16))
				fill(r, o.data)
				o.recv = make([]byte, 1<<16)
				require.NoError(t, p.b.PostRecv(uint64(i), o.recv))
			}
		}
		p.pipeA.SetMULPDU(mulpdu)
		p.pipeB.SetMULPDU(mulpdu)
	})
	for i, o := range ops {
		var wr SendWR
		switch o.kind {
		case WRWrite:
			wr = SendWR{ID: uint64(i), Op: WRWrite, Local: o.data, RemoteSTag: o.mr.STag(), RemoteTO: o.mr.BaseTO() + 8}
		case WRRead:
			wr = SendWR{ID: uint64(i), Op: WRRead, Sink: o.mr, Length: uint32(len(o.buf)), RemoteSTag: src.STag(), RemoteTO: uint64(o.off)}
		case WRSend:
			wr = SendWR{ID: uint64(i), Op: WRSend, Local: o.data}
		}
		require.NoError(t, p.a.postSend1(wr))
	}
	// RFC 5040 §5.5 rule 5: a final Send tells B that every Write is placed.
	require.NoError(t, p.b.PostRecv(uint64(n), make([]byte, 1)))
	require.NoError(t, p.a.postSend1(SendWR{ID: uint64(n), Op: WRSend}))
	for i, o := range ops {
		c := poll(t, p.cqA)
		require.NoError(t, c.Err)
		require.Equal(t, uint64(i), c.WRID, "rule 15: submission order")
		require.Equal(t, o.kind, c.Op)
		if o.kind == WRRead {
			require.True(t, bytes.Equal(srcBuf[o.off:o.off+len(o.buf)], o.buf), "read %d", i)
			require.Equal(t, len(o.buf), c.Length)
		}
	}
	// A Send after the Writes is delivered after they were placed (rule 10).
	for i, o := range ops {
		if o.kind != WRSend {
			continue
		}
		c := poll(t, p.rcqB)
		require.Equal(t, uint64(i), c.WRID)
		require.Equal(t, o.data, o.recv[:c.Length])
	}
	require.Equal(t, uint64(n), poll(t, p.rcqB).WRID)
	require.Equal(t, uint64(n), poll(t, p.cqA).WRID)
	for i, o := range ops {
		if o.kind == WRWrite {
			require.True(t, bytes.Equal(o.data, o.buf[8:8+len(o.data)]), "write %d", i)
			require.Equal(t, make([]byte, 8), o.buf[:8], "guard before write %d", i)
		}
	}
}

// Many goroutines posting at once: data-race free, nothing lost.
func TestEndpoint_ConcurrentPosters(t *testing.T) {
	var tgt *MR
	tbuf := make([]byte, 8*64)
	p := newPair(t, EndpointConfig{SQDepth: 1024}, EndpointConfig{RQDepth: 1024}, func(p *pair) {
		var err error
		tgt, err = p.pdB.Register(tbuf, RemoteWrite|RemoteAtomic)
		require.NoError(t, err)
	})
	ctx := ctx5(t)
	for i := range 400 {
		require.NoError(t, p.b.PostRecv(uint64(i), make([]byte, 8)))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				switch i % 3 {
				case 0:
					assert.NoError(t, p.a.send(ctx, []byte{byte(g)}))
				case 1:
					_, err := p.a.fetchAdd(ctx, tgt.STag(), 0, 1, 0)
					assert.NoError(t, err)
				case 2:
					assert.NoError(t, p.a.write(ctx, []byte{byte(i)}, tgt.STag(), uint64(64*(g%7+1))))
				}
			}
		})
	}
	wg.Wait()
	// RFC 7306 §5.3: atomics are atomic: every add counted.
	assert.Equal(t, uint64(8*17), binary.NativeEndian.Uint64(tbuf[0:8]))
	got := 0
	for got < 8*17 {
		c := poll(t, p.rcqB)
		require.NoError(t, c.Err)
		got++
	}
}

func TestEndpoint_GracefulClose_WaitsForOutstanding(t *testing.T) {
	var src, sink *MR
	p := newPair(t, EndpointConfig{}, EndpointConfig{}, func(p *pair) {
		var err error
		src, err = p.pdB.Register(make([]byte, 1<<20), RemoteRead)
		require.NoError(t, err)
		sink, err = p.pdA.Register(make([]byte, 1<<20), LocalWrite)
		require.NoError(t, err)
	})
	for i := range 10 {
		require.NoError(t, p.a.postSend1(SendWR{ID: uint64(i), Op: WRRead, Sink: sink, Length: 1 << 20, RemoteSTag: src.STag()}))
	}
	require.NoError(t, p.a.PostRecv(99, make([]byte, 1)))
	require.NoError(t, p.a.Close(ctx5(t)))
	for i := range 10 {
		c, ok := p.cqA.tryPoll()
		require.True(t, ok)
		assert.Equal(t, uint64(i), c.WRID)
		assert.NoError(t, c.Err, "Close waited for the Read")
	}
	c, ok := p.rcqA.tryPoll()
	require.True(t, ok)
	assert.ErrorIs(t, c.Err, ErrFlushed)
	assert.ErrorIs(t, c.Err, ErrClosed)
	require.ErrorIs(t, p.a.postSend1(SendWR{Op: WRSend}), ErrClosed)
	waitDone(t, p.b)
	assert.ErrorIs(t, p.b.Err(), ErrPeerClosed)
}

func TestEndpoint_HelperContextCanceledWhileQueued(t *testing.T) {
	var src, sink *MR
	p := newPair(t, EndpointConfig{ORD: 1}, EndpointConfig{IRD: 1}, func(p *pair) {
		var err error
		src, err = p.pdB.Register(make([]byte, 4<<20), RemoteRead)
		require.NoError(t, err)
		sink, err = p.pdA.Register(make([]byte, 4<<20), LocalWrite)
		require.NoError(t, err)
	})
	require.NoError(t, p.a.postSend1(SendWR{ID: 1, Op: WRRead, Sink: sink, Length: 4 << 20, RemoteSTag: src.STag()}))
	require.NoError(t, p.a.postSend1(SendWR{ID: 2, Op: WRRead, Sink: sink, Length: 4 << 20, RemoteSTag: src.STag()}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Queued behind the second Read, which waits for ORD: canceled while
	// still in the send queue, so never sent.
	err := p.a.send(ctx, []byte("x"))
	require.ErrorIs(t, err, context.Canceled)
	for _, id := range []uint64{1, 2} {
		c := poll(t, p.cqA)
		assert.Equal(t, id, c.WRID)
		require.NoError(t, c.Err)
	}
}

func TestEndpoint_PostErrors(t *testing.T) {
	var other *MR
	p := newPair(t, EndpointConfig{SQDepth: 1, RQDepth: 1, ORD: -1}, EndpointConfig{}, func(p *pair) {
		var err error
		other, err = p.pdB.Register(make([]byte, 8), LocalWrite)
		require.NoError(t, err)
	})
	require.ErrorIs(t, p.a.postSend1(SendWR{Op: 0}), ErrInvalidWR)
	require.ErrorIs(t, p.a.postSend1(SendWR{Op: WRRead, Length: 1}), ErrInvalidWR)
	require.ErrorIs(t, p.a.postSend1(SendWR{Op: WRFetchAdd}), ErrInvalidWR, "ORD 0")
	require.ErrorIs(t, p.a.postSend1(SendWR{Op: WRWrite, Local: []byte{1, 2}, RemoteTO: ^uint64(0)}), ErrInvalidWR)
	require.NoError(t, p.a.PostRecv(0, make([]byte, 1)))
	require.ErrorIs(t, p.a.PostRecv(0, make([]byte, 1)), ErrResourceLimit)
	require.NoError(t, p.b.postSend1(SendWR{Op: WRSend, Local: []byte{1}}))
	_ = other
	c := poll(t, p.rcqA)
	require.NoError(t, c.Err)
	// Read sink of another PD is a local protection error.
	pq := newPair(t, EndpointConfig{}, EndpointConfig{})
	m, err := pq.pdB.Register(make([]byte, 8), LocalWrite)
	require.NoError(t, err)
	require.ErrorIs(t, pq.a.postSend1(SendWR{Op: WRRead, Sink: m, Length: 8}), errAccess)
	m2, err := pq.pdA.Register(make([]byte, 8), 0)
	require.NoError(t, err)
	require.ErrorIs(t, pq.a.postSend1(SendWR{Op: WRRead, Sink: m2, Length: 8}), errAccess, "no LocalWrite")
	m3, err := pq.pdA.Register(make([]byte, 8), LocalWrite)
	require.NoError(t, err)
	require.ErrorIs(t, pq.a.postSend1(SendWR{Op: WRRead, Sink: m3, SinkOffset: 4, Length: 8}), errAccess, "bounds")
	require.NoError(t, m3.Invalidate())
	require.ErrorIs(t, pq.a.postSend1(SendWR{Op: WRRead, Sink: m3, Length: 8}), errAccess, "invalid")
}

func TestEndpoint_StartTwiceAndCloseIdle(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	require.ErrorIs(t, p.a.Start(), ErrClosed)
	dev := newDevice(0, 0)
	a, b := newPipes()
	e, err := dev.AllocPD().NewEndpoint(a, EndpointConfig{})
	require.NoError(t, err)
	require.NoError(t, e.Close(context.Background()))
	<-e.Done()
	require.ErrorIs(t, e.postSend1(SendWR{Op: WRSend}), ErrClosed)
	require.ErrorIs(t, e.Abort(), ErrClosed)
	_ = b.Close()
}

// An LLP failure (stream aborted) flushes everything (RFC 5040 §6.2 LLP
// Abortive Termination) without a Terminate.
func TestEndpoint_LLPAbortiveTermination_RFC5040_6_2(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	for i := range 5 {
		require.NoError(t, p.a.PostRecv(uint64(i), make([]byte, 1)))
	}
	_ = p.pipeB.Abort()
	waitDone(t, p.a)
	for i := range 5 {
		c := poll(t, p.rcqA)
		assert.Equal(t, uint64(i), c.WRID)
		assert.ErrorIs(t, c.Err, ErrFlushed)
		assert.ErrorIs(t, c.Err, ErrFlushed)
	}
	sent, _ := p.a.terminateSent()
	assert.False(t, sent)
	var te *TerminateError
	assert.False(t, errors.As(p.a.Err(), &te))
	time.Sleep(time.Millisecond)
}

// TestEndpoint_Inline: an Inline Send or Write takes its payload at
// PostSend, so the caller may overwrite the buffer at once; each message
// arrives with the contents it had when posted. Inline is refused above
// maxInline and for operations without a local payload.
func TestEndpoint_Inline(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	const n = 32
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, maxInline)
		require.NoError(t, p.b.PostRecv(uint64(i), bufs[i]))
	}
	target := make([]byte, maxInline)
	mr, err := p.pdB.Register(target, RemoteWrite, MROption{Endpoint: p.b})
	require.NoError(t, err)

	buf := make([]byte, maxInline)
	for i := range n {
		for j := range buf {
			buf[j] = byte(i)
		}
		require.NoError(t, p.a.postSend1(SendWR{ID: uint64(i), Op: WRSend, Local: buf[:i+1], Inline: true}))
		for j := range buf {
			buf[j] = 0xEE // reused before the completion
		}
	}
	for range n {
		c := poll(t, p.rcqB)
		require.NoError(t, c.Err)
		assert.Equal(t, int(c.WRID)+1, c.Length)
		assert.Equal(t, bytes.Repeat([]byte{byte(c.WRID)}, c.Length), bufs[c.WRID][:c.Length])
	}
	for range n {
		require.NoError(t, poll(t, p.cqA).Err)
	}

	copy(buf, bytes.Repeat([]byte{7}, maxInline))
	require.NoError(t, p.a.postSend1(SendWR{ID: 99, Op: WRWrite, Local: buf, RemoteSTag: mr.STag(), Inline: true}))
	clear(buf)
	require.NoError(t, poll(t, p.cqA).Err)
	sink, err := p.pdA.Register(make([]byte, maxInline), LocalWrite)
	require.NoError(t, err)
	rmr, err := p.pdB.Register(target, RemoteRead, MROption{Endpoint: p.b})
	require.NoError(t, err)
	require.NoError(t, p.a.read(context.Background(), sink, 0, maxInline, rmr.STag(), 0))
	assert.Equal(t, bytes.Repeat([]byte{7}, maxInline), sink.Bytes())

	require.ErrorIs(t, p.a.postSend1(SendWR{Op: WRSend, Local: make([]byte, maxInline+1), Inline: true}), ErrInvalidWR)
	require.ErrorIs(t, p.a.postSend1(SendWR{Op: WRRead, Sink: sink, Length: 8, RemoteSTag: rmr.STag(), Inline: true}), ErrInvalidWR)
	require.ErrorIs(t, p.a.postSend1(SendWR{Op: WRImmediate, Inline: true}), ErrInvalidWR)
}
