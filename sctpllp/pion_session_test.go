package sctpllp

import (
	"bytes"
	"context"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"sync"
	"testing"
	"time"

	"github.com/pion/transport/v5/dpipe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// udpPair sets up two associations over cfg.Stack (default pion) on
// 127.0.0.1 UDP.
func udpPair(t *testing.T, cfg Config) (client, server *Association) {
	t.Helper()
	if cfg.Stack == nil {
		cfg.Stack = pion.Stack(pion.Config{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	type res struct {
		a   *Association
		err error
	}
	ch := make(chan res, 1)
	go func() {
		a, err := l.Accept(ctx)
		ch <- res{a, err}
	}()
	client, err = Dial(ctx, l.Addr(), cfg)
	require.NoError(t, err)
	r := <-ch
	require.NoError(t, r.err)
	require.NoError(t, l.Close())
	server = r.a
	t.Cleanup(func() {
		_ = client.Close()
		_ = server.Close()
	})
	return client, server
}

// pipePair sets up two associations over pion on an in-memory dpipe.
func pipePair(t *testing.T, cfg Config) (client, server *Association) {
	t.Helper()
	ca, cb := dpipe.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := make(chan backend.Transport, 1)
	go func() {
		st, err := pion.NewTransport(ctx, cb, false, pion.Config{})
		assert.NoError(t, err)
		ch <- st
	}()
	ct, err := pion.NewTransport(ctx, ca, true, pion.Config{})
	require.NoError(t, err)
	st := <-ch
	require.NotNil(t, st)
	client, server = NewAssociation(ct, cfg), NewAssociation(st, cfg)
	t.Cleanup(func() {
		_ = client.Close()
		_ = server.Close()
	})
	return client, server
}

// openPair opens sid from client, accepts on server and starts handlers.
func openPair(t *testing.T, client, server *Association, sid uint16, req OpenRequest, acc AcceptParams) (cs, ss Session, ch, sh *recHandler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type res struct {
		s   Session
		err error
	}
	got := make(chan res, 1)
	go func() {
		in, err := server.Accept(ctx)
		if err != nil {
			got <- res{nil, err}
			return
		}
		s, err := in.Accept(acc)
		got <- res{s, err}
	}()
	cs, err := client.Open(ctx, sid, req)
	require.NoError(t, err)
	r := <-got
	require.NoError(t, r.err)
	ss = r.s
	ch, sh = newRec(), newRec()
	cs.Start(ch)
	ss.Start(sh)
	return cs, ss, ch, sh
}

// RFC 5043 §9 over real pion: MULPDU from the MTU, ≥ 516, and a segment of
// exactly MULPDU arrives in one piece.
func TestPion_MULPDUFromMTU_RFC5043_9(t *testing.T) {
	c, s := udpPair(t, Config{Stack: pion.Stack(pion.Config{MTU: 1500}), KeepIdle: true})
	pt := c.Transport().(pionTransport)
	assert.Equal(t, 1444, pt.MaxMessage())
	assert.Equal(t, 1444-2-pmtu.BundlingReserve, c.MULPDU())
	assert.GreaterOrEqual(t, c.MULPDU(), iwarp.SCTPMinMULPDU)
	rcv, snd := pt.SocketBuffers()
	t.Logf("UDP socket buffers granted: SO_RCVBUF %d, SO_SNDBUF %d", rcv, snd)
	cs, _, _, sh := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	seg := bytes.Repeat([]byte{7}, cs.MULPDU())
	require.NoError(t, cs.SendSegment(seg[:14], seg[14:]))
	assert.ErrorIs(t, cs.SendSegment(seg, []byte{1}), llp.ErrSegmentTooLarge)
	sh.waitCount(t, 1)
	assert.Equal(t, seg, sh.segs[0])

	_, err := pion.Stack(pion.Config{MTU: 500}).Dial(context.Background(), "127.0.0.1:1")
	assert.Error(t, err, "an MTU below the 516-octet MULPDU is refused")
}

// RFC 5043 §6.2 with private data of 0, 1 and 512 octets and the enhanced
// IRD/ORD word of RFC 6581 §9, over pion/UDP.
func TestPion_InitiateAcceptPrivateData_RFC5043_5_2_3(t *testing.T) {
	c, s := udpPair(t, Config{KeepIdle: true})
	for i, n := range []int{0, 1, 512} {
		pd := bytes.Repeat([]byte{byte(n)}, n)
		sid := uint16(i + 1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		done := make(chan struct{})
		go func() {
			defer close(done)
			in, err := s.Accept(ctx)
			if !assert.NoError(t, err) {
				return
			}
			assert.Equal(t, pd, append([]byte{}, in.PrivateData...))
			ss, err := in.Accept(AcceptParams{PrivateData: pd})
			assert.NoError(t, err)
			if ss != nil {
				ss.Start(newRec())
			}
		}()
		cs, err := c.Open(ctx, sid, OpenRequest{PrivateData: pd})
		require.NoError(t, err)
		assert.Equal(t, pd, append([]byte{}, cs.Params().PeerPrivateData...))
		<-done
		cancel()
		cs.Start(newRec())
	}
	_, err := c.Open(context.Background(), 9, OpenRequest{PrivateData: make([]byte, 513)})
	assert.ErrorIs(t, err, errPrivateDataTooLong)
}

func TestPion_EnhancedIRDORD_RFC6581_9(t *testing.T) {
	c, s := pipePair(t, Config{KeepIdle: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		in, err := s.Accept(ctx)
		if !assert.NoError(t, err) {
			return
		}
		assert.True(t, in.Enhanced)
		assert.Equal(t, iwarp.IRDORD{PeerToPeer: true, IRD: 16, ORD: 8, RTR: iwarp.RTRWrite | iwarp.RTRRead}, in.IRDORD)
		ss, err := in.Accept(AcceptParams{IRD: 8, ORD: 16, PrivateData: []byte("p"), RTR: iwarp.RTRRead})
		if assert.NoError(t, err) {
			ss.Start(newRec())
		}
	}()
	cs, err := c.Open(ctx, 7, OpenRequest{Enhanced: true, IRD: 16, ORD: 8, PeerToPeer: true, RTR: iwarp.RTRWrite | iwarp.RTRRead})
	require.NoError(t, err)
	p := cs.Params()
	assert.True(t, p.Enhanced)
	assert.Equal(t, iwarp.IRDORD{PeerToPeer: true, IRD: 8, ORD: 16, RTR: iwarp.RTRRead}, p.PeerIRDORD, "A echoed (RFC 6581 §9.2)")
	assert.Equal(t, []byte("p"), p.PeerPrivateData)
	cs.Start(newRec())
}

func TestPion_Reject_RFC5043_6_3(t *testing.T) {
	c, s := pipePair(t, Config{KeepIdle: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		in, err := s.Accept(ctx)
		if assert.NoError(t, err) {
			assert.NoError(t, in.Reject([]byte("busy")))
		}
	}()
	_, err := c.Open(ctx, 3, OpenRequest{Enhanced: true})
	var re *RejectError
	require.ErrorAs(t, err, &re)
	assert.True(t, re.Enhanced)
	assert.Equal(t, []byte("busy"), re.PrivateData)
	assert.Equal(t, uint16(iwarp.NoNegotiation), re.IRDORD.ORD)
}

// Many sessions opened concurrently on one association, data both ways.
// pion discards the first chunk of a new stream beyond its 16-deep accept
// queue until the T3-rtx timeout: before Config.MaxOpening's bound this
// took 0.7–3.2 s, and over 30 s (the deadline) in about one loaded -race
// run in ten; now about 0.1 s.
func TestPion_ManyConcurrentSessions(t *testing.T) {
	c, s := udpPair(t, Config{KeepIdle: true, MaxPendingInitiates: 256})
	const n = 200
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	servers := make(chan Session, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			in, err := s.Accept(ctx)
			if !assert.NoError(t, err) {
				return
			}
			ss, err := in.Accept(AcceptParams{PrivateData: []byte{byte(in.StreamID)}})
			if assert.NoError(t, err) {
				servers <- ss
			}
		}
	}()
	clients := make([]Session, n)
	handlers := make([]*recHandler, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := c.Open(ctx, uint16(i*7+1), OpenRequest{})
			if !assert.NoError(t, err) {
				return
			}
			assert.Equal(t, []byte{byte(i*7 + 1)}, cs.Params().PeerPrivateData)
			clients[i] = cs
			handlers[i] = newRec()
			cs.Start(handlers[i])
		}()
	}
	wg.Wait()
	close(servers)
	for ss := range servers {
		ss.Start(echoHandler{ss})
	}
	for i, cs := range clients {
		require.NotNil(t, cs)
		for k := range 5 {
			require.NoError(t, cs.SendSegment([]byte{byte(k)}, []byte(fmt.Sprint(i))))
		}
	}
	for i, h := range handlers {
		h.waitCount(t, 5)
		for k := range 5 {
			assert.Equal(t, append([]byte{byte(k)}, fmt.Sprint(i)...), h.segs[k])
		}
	}
}

type echoHandler struct{ s Session }

func (e echoHandler) HandleSegment(seg []byte) error { return e.s.SendSegment(seg, nil) }
func (e echoHandler) HandleClosed(error)             {}

// An illegal sequence on one stream over real pion: injected through the
// transport, it terminates that session only.
func TestPion_IllegalSequenceTerminatesOneSession_RFC5043_6_1(t *testing.T) {
	c, s := pipePair(t, Config{KeepIdle: true})
	_, ss1, ch1, sh1 := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	cs2, _, _, sh2 := openPair(t, c, s, 2, OpenRequest{}, AcceptParams{})
	// A second Initiate on stream 1 with the next DDP-SSN.
	require.NoError(t, c.Transport().WriteMsg(1, backend.PPIDControl, ddpchunk.Control{SSN: 1, Function: funcInitiate}.Append(nil)))
	err := sh1.waitClosed(t)
	assert.ErrorIs(t, err, errProtocol)
	// The client's session 1 sees the Terminate as a graceful peer end.
	assert.NoError(t, ch1.waitClosed(t))
	assert.ErrorIs(t, ss1.SendSegment(nil, []byte{1}), llp.ErrClosed)
	require.NoError(t, cs2.SendSegment([]byte{1}, []byte("still fine")))
	sh2.waitCount(t, 1)
}

// RFC 5040 §7: when every stream is closed or erroneous the association is
// torn down.
func TestPion_CloseAllStreamsShutsDownAssociation_RFC5040_7(t *testing.T) {
	c, s := udpPair(t, Config{})
	cs1, _, ch1, sh1 := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	cs2, _, ch2, sh2 := openPair(t, c, s, 2, OpenRequest{}, AcceptParams{})
	require.NoError(t, cs1.SendSegment([]byte{1}, nil))
	require.NoError(t, cs1.Close())
	assert.NoError(t, sh1.waitClosed(t))
	assert.NoError(t, ch1.waitClosed(t))
	select {
	case <-c.Done():
		t.Fatal("association ended while stream 2 is open")
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, cs2.Close())
	assert.NoError(t, sh2.waitClosed(t))
	assert.NoError(t, ch2.waitClosed(t))
	for _, a := range []*Association{c, s} {
		select {
		case <-a.Done():
			assert.NoError(t, a.Err())
		case <-time.After(15 * time.Second):
			t.Fatal("association not shut down")
		}
	}
}

// RFC 5043 §11.3: SCTP ABORT reaches every session as llp.ErrAborted.
func TestPion_AbortPropagates_RFC5043_11_3(t *testing.T) {
	c, s := udpPair(t, Config{KeepIdle: true})
	_, _, ch1, sh1 := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	_, _, ch2, sh2 := openPair(t, c, s, 2, OpenRequest{}, AcceptParams{})
	require.NoError(t, c.Abort())
	for _, h := range []*recHandler{ch1, ch2, sh1, sh2} {
		err := h.waitClosed(t)
		assert.ErrorIs(t, err, llp.ErrAborted)
	}
	select {
	case <-s.Done():
		assert.ErrorIs(t, s.Err(), llp.ErrAborted)
	case <-time.After(10 * time.Second):
		t.Fatal("peer association did not end")
	}
}

// RFC 5043 §6.6: a closed stream id is reusable only after both sides'
// Terminate and the stream reset.
func TestPion_StreamReuseAfterQuarantine_RFC5043_6_6(t *testing.T) {
	c, s := pipePair(t, Config{KeepIdle: true, QuietTime: time.Hour})
	cs, _, ch, sh := openPair(t, c, s, 5, OpenRequest{}, AcceptParams{})
	require.NoError(t, cs.Close())
	assert.NoError(t, ch.waitClosed(t))
	assert.NoError(t, sh.waitClosed(t))
	require.Eventually(t, func() bool {
		return c.Transport().(pionTransport).StreamFree(5) && s.Transport().(pionTransport).StreamFree(5)
	}, 10*time.Second, 5*time.Millisecond)
	cs2, _, _, sh2 := openPair(t, c, s, 5, OpenRequest{PrivateData: []byte("again")}, AcceptParams{})
	require.NoError(t, cs2.SendSegment([]byte{9}, nil))
	sh2.waitCount(t, 1)
	assert.Equal(t, []byte{9}, sh2.segs[0])
}

func TestPion_OpenOnBusyStream(t *testing.T) {
	c, s := pipePair(t, Config{KeepIdle: true})
	openPair(t, c, s, 5, OpenRequest{}, AcceptParams{})
	_, err := c.Open(context.Background(), 5, OpenRequest{})
	assert.ErrorIs(t, err, backend.ErrStreamInUse)
}

// Data volume with flow control: the writer blocks instead of buffering
// without bound, and everything arrives in order.
func TestPion_BulkInOrder(t *testing.T) {
	c, s := udpPair(t, Config{KeepIdle: true, Stack: pion.Stack(pion.Config{StreamSendBuffer: 64 << 10, SendBuffer: 128 << 10})})
	cs, _, _, sh := openPair(t, c, s, 1, OpenRequest{}, AcceptParams{})
	const n = 3000
	payload := make([]byte, cs.MULPDU()-4)
	for i := range n {
		hdr := []byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}
		require.NoError(t, cs.SendSegment(hdr, payload))
		pt := c.Transport().(pionTransport)
		assert.LessOrEqual(t, pt.Buffered(), 128<<10+cs.MULPDU()+2)
	}
	sh.waitCount(t, n)
	for i, seg := range sh.segs {
		require.Equal(t, []byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)}, seg[:4])
	}
}
