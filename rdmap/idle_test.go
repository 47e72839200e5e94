package rdmap

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/sctp-rdma/sctp-rdma/internal/ring"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loopsIdle reports whether e's transmit and responder goroutines ended.
func loopsIdle(e *Endpoint) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.txRunning && !e.respRunning
}

// TestIdleEndpointHoldsNoLoops: the transmit and responder goroutines run
// only while there is work (issue 21: no goroutine per idle stream). After
// a burst of Writes, Reads and Atomics both endpoints go back to no loop,
// and the next request starts them again and completes; requests that
// wait for an ORD slot (RFC 5040 §6.1) are issued when the slot frees.
func TestIdleEndpointHoldsNoLoops(t *testing.T) {
	var tgt *MR
	p := newPair(t, EndpointConfig{ORD: 1, SQDepth: 64}, EndpointConfig{IRD: 1}, func(p *pair) {
		var err error
		tgt, err = p.pdB.Register(make([]byte, 64<<10), RemoteWrite|RemoteRead|RemoteAtomic)
		require.NoError(t, err)
	})
	sink, err := p.pdA.Register(make([]byte, 64<<10), LocalWrite)
	require.NoError(t, err)
	idle := func() bool { return loopsIdle(p.a) && loopsIdle(p.b) }
	require.Eventually(t, idle, 5*time.Second, time.Millisecond, "after the start (RTR sent)")

	for round := range 3 {
		// 32 KiB Writes (above inlineIssueMax: the transmit loop sends
		// them) into the second half, then Reads and Atomics that queue
		// behind ORD 1.
		const n = 8
		for i := range n {
			require.NoError(t, p.a.postSend1(SendWR{ID: uint64(i), Op: WRWrite, Local: make([]byte, 32<<10), RemoteSTag: tgt.STag(), RemoteTO: 32 << 10}))
		}
		for i := range n {
			require.NoError(t, p.a.postSend1(SendWR{ID: uint64(n + i), Op: WRRead, Sink: sink, Length: 4096, RemoteSTag: tgt.STag()}))
			require.NoError(t, p.a.postSend1(SendWR{ID: uint64(2*n + i), Op: WRFetchAdd, RemoteSTag: tgt.STag(), RemoteTO: 8, Add: 1}))
		}
		for range 3 * n {
			c, err := p.cqA.Poll(t.Context())
			require.NoError(t, err)
			require.NoError(t, c.Err, "round %d: %v", round, c.Op)
		}
		require.Eventually(t, idle, 5*time.Second, time.Millisecond, "round %d: the loops end when the queues are empty", round)
	}
	assert.Equal(t, uint64(3*8), binary.NativeEndian.Uint64(tgt.Bytes()[8:16]), "every FetchAdd applied once")
}

// TestAfterDone: a function registered before the end runs once the
// endpoint is done, after Done is closed; one registered after runs at
// once. Nothing runs while the endpoint lives.
func TestAfterDone(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	ran := make(chan bool, 2)
	p.a.whenDone(func() {
		select {
		case <-p.a.Done():
			ran <- true
		default:
			ran <- false
		}
	})
	select {
	case <-ran:
		t.Fatal("AfterDone ran while the endpoint lives")
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, p.a.Close(t.Context()))
	select {
	case closed := <-ran:
		assert.True(t, closed, "Done was closed first")
	case <-time.After(5 * time.Second):
		t.Fatal("AfterDone did not run after the close")
	}
	p.a.whenDone(func() { ran <- true })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterDone on a finished endpoint did not run")
	}
}

// TestDoneMadeOnFirstUse: an endpoint holds no Done channel until asked
// for one (streams watch it with AfterDone); one asked for after the end
// is closed already; an endpoint closed before it was started runs its
// AfterDone functions too.
func TestDoneMadeOnFirstUse(t *testing.T) {
	p := newPair(t, EndpointConfig{}, EndpointConfig{})
	p.a.mu.Lock()
	assert.Nil(t, p.a.done, "no channel before Done is called")
	p.a.mu.Unlock()
	require.NoError(t, p.b.Close(t.Context()))
	waitDone(t, p.b)
	select {
	case <-p.b.Done():
	default:
		t.Fatal("Done made after the end must be closed")
	}

	pa, pb := newPipes()
	defer pb.Close()
	ep, err := newDevice(0, 0).AllocPD().NewEndpoint(pa, EndpointConfig{})
	require.NoError(t, err)
	ran := make(chan struct{})
	ep.whenDone(func() { close(ran) })
	require.NoError(t, ep.Close(t.Context()))
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterDone of an endpoint closed before Start did not run")
	}
	select {
	case <-ep.Done():
	default:
		t.Fatal("Done of an endpoint closed before Start")
	}
}

// TestIdleStateBudget: every idle stream holds an endpoint and two CQs;
// their sizes are what 10,000 streams per association multiply (issue 21:
// at most 4 KiB per idle stream for both ends). Within Go's size classes
// of 384 and 64 octets (512 and 96 before the queues' rings were made on
// first use): a field added beyond them costs 32 and 16 octets per stream
// and end (found by transport's BenchmarkManyStreams: 3.95 → 4.13 KiB per
// idle stream once). An idle endpoint's queues hold no ring.
func TestIdleStateBudget(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Endpoint{}), uintptr(384), "Endpoint")
	assert.LessOrEqual(t, unsafe.Sizeof(CQ{}), uintptr(64), "CQ")
	var q ring.Ring[*sendReq]
	assert.Zero(t, q.Len())
	q.Reset() // a no-op on a queue that never held anything
	assert.False(t, q.Allocated(), "no ring before the first push")
	e := &Endpoint{}
	for _, r := range []*ring.Ring[*sendReq]{&e.sq, &e.order, &e.orq} {
		assert.False(t, r.Allocated(), "an idle endpoint's queues hold no ring")
	}
	assert.False(t, e.rq.Allocated())
	assert.False(t, e.irq.Allocated())
}
