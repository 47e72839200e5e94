package sctpllp

import (
	"context"
	"errors"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/contract"
)

func newFakeAssoc(t *testing.T, cfg Config) (*Association, *fakeTransport) {
	t.Helper()
	ft := newFake(64)
	cfg.KeepIdle = true
	a := NewAssociation(ft, cfg)
	t.Cleanup(func() { _ = a.Close() })
	return a, ft
}

// passiveSession plays an initiator on sid and accepts locally.
func passiveSession(t *testing.T, a *Association, ft *fakeTransport, sid uint16) (Session, *recHandler) {
	t.Helper()
	ft.injectCtl(sid, ddpchunk.Control{SSN: 0, Function: funcInitiate, PrivateData: []byte("hello")})
	in, err := a.Accept(context.Background())
	require.NoError(t, err)
	assert.Equal(t, sid, in.StreamID)
	assert.Equal(t, []byte("hello"), in.PrivateData)
	s, err := in.Accept(AcceptParams{PrivateData: []byte("yes")})
	require.NoError(t, err)
	gsid, c := ft.nextCtl(t)
	assert.Equal(t, sid, gsid)
	assert.Equal(t, ddpchunk.Control{SSN: 0, Function: funcAccept, PrivateData: []byte("yes")}, c)
	h := newRec()
	s.Start(h)
	return s, h
}

// RFC 5043 §6.2 passive side, DDP-SSN from 0 without gaps (§5.2.1, §6.1).
func TestSession_PassiveAcceptAndSSN_RFC5043_6_2(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	s, h := passiveSession(t, a, ft, 3)
	require.NoError(t, s.SendSegment([]byte{0xC1}, []byte("abc")))
	require.NoError(t, s.SendSegment([]byte{0xC2}, nil))
	m := ft.next(t)
	assert.Equal(t, backend.PPIDSegment, m.ppid)
	assert.Equal(t, []byte{0, 1, 0xC1, 'a', 'b', 'c'}, m.b, "Accept took DDP-SSN 0")
	m = ft.next(t)
	assert.Equal(t, []byte{0, 2, 0xC2}, m.b)

	ft.injectSeg(3, 2, []byte("second"))
	ft.injectSeg(3, 1, []byte("first"))
	h.waitCount(t, 2)
	assert.Equal(t, [][]byte{[]byte("first"), []byte("second")}, h.segs)
	assert.Equal(t, uint64(2), s.Info().SegmentsReceived)

	// Peer Terminate: HandleClosed(nil), our Terminate follows (§6.2).
	ft.injectCtl(3, ddpchunk.Control{SSN: 3, Function: funcTerminate})
	require.NoError(t, h.waitClosed(t))
	_, c := ft.nextCtl(t)
	assert.Equal(t, ddpchunk.Control{SSN: 3, Function: funcTerminate}, c)
	assert.ErrorIs(t, s.SendSegment(nil, []byte{1}), llp.ErrClosed)
}

// RFC 5043 §6.6: segments the initiator sends after its Initiate and before
// the Accept are held and delivered after Start.
func TestSession_SegmentsBeforeAccept_RFC5043_6_6(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	ft.injectCtl(1, ddpchunk.Control{SSN: 0, Function: funcInitiate})
	ft.injectSeg(1, 2, []byte("b"))
	ft.injectSeg(1, 1, []byte("a"))
	in, err := a.Accept(context.Background())
	require.NoError(t, err)
	s, err := in.Accept(AcceptParams{})
	require.NoError(t, err)
	ft.nextCtl(t)
	h := newRec()
	s.Start(h)
	assert.Equal(t, [][]byte{[]byte("a"), []byte("b")}, h.segs)
}

// RFC 5043 §6.1: illegal sequences terminate only that session.
func TestSession_IllegalSequences_RFC5043_6_1(t *testing.T) {
	cases := []struct {
		name string
		poke func(ft *fakeTransport, sid uint16)
	}{
		{"second Initiate", func(ft *fakeTransport, sid uint16) {
			ft.injectCtl(sid, ddpchunk.Control{SSN: 1, Function: funcInitiate})
		}},
		{"Accept from initiator", func(ft *fakeTransport, sid uint16) {
			ft.injectCtl(sid, ddpchunk.Control{SSN: 1, Function: funcAccept})
		}},
		{"unknown PPID", func(ft *fakeTransport, sid uint16) {
			ft.fn(sid, 51, []byte{0, 1, 2, 3})
		}},
		{"malformed control", func(ft *fakeTransport, sid uint16) {
			ft.fn(sid, backend.PPIDControl, []byte{0, 1, 0, 4, 9})
		}},
		{"SSN window", func(ft *fakeTransport, sid uint16) {
			ft.injectSeg(sid, 1+contract.MaxSSNWindow+1, []byte{1})
		}},
		{"SSN duplicate", func(ft *fakeTransport, sid uint16) {
			ft.injectSeg(sid, 1, []byte{1})
			ft.injectSeg(sid, 1, []byte{1})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, ft := newFakeAssoc(t, Config{})
			s1, h1 := passiveSession(t, a, ft, 1)
			_, h2 := passiveSession(t, a, ft, 2)
			tc.poke(ft, 1)
			err := h1.waitClosed(t)
			var pe *protocolError
			require.ErrorAs(t, err, &pe)
			assert.ErrorIs(t, err, errProtocol)
			assert.Equal(t, uint16(1), pe.StreamID)
			sid, c := ft.nextCtl(t)
			assert.Equal(t, uint16(1), sid)
			assert.Equal(t, funcTerminate, c.Function)
			assert.ErrorIs(t, s1.SendSegment(nil, []byte{1}), llp.ErrClosed)
			// Stream 2 is unaffected.
			ft.injectSeg(2, 1, []byte("ok"))
			h2.waitCount(t, 1)
			select {
			case <-h2.closed:
				t.Fatal("stream 2 closed")
			default:
			}
		})
	}
}

// RFC 5043 §6.1: a DDP segment on a stream without a session is answered
// with a Session Terminate on that stream, which is then quarantined.
func TestSession_SegmentWithoutSession(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{QuietTime: time.Hour})
	ft.injectSeg(9, 0, []byte{1, 2})
	sid, c := ft.nextCtl(t)
	assert.Equal(t, uint16(9), sid)
	assert.Equal(t, ddpchunk.Control{SSN: 0, Function: funcTerminate}, c)
	ft.injectSeg(9, 1, []byte{1, 2})
	ft.quiet(t)
	_, err := a.Open(context.Background(), 9, OpenRequest{})
	assert.ErrorIs(t, err, backend.ErrStreamInUse)
}

// RFC 5043 §6.3 and §6.4 on the active side.
func TestSession_OpenRejectedAndTerminated_RFC5043_6_3(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	go func() {
		_, c := ft.nextCtl(t)
		assert.Equal(t, ddpchunk.Control{Function: funcInitiate, PrivateData: []byte("req")}, c)
		ft.injectCtl(4, ddpchunk.Control{Function: funcReject, PrivateData: []byte("no thanks")})
	}()
	_, err := a.Open(context.Background(), 4, OpenRequest{PrivateData: []byte("req")})
	var re *RejectError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, []byte("no thanks"), re.PrivateData)
	assert.Equal(t, uint16(4), re.StreamID)

	go func() {
		ft.nextCtl(t)
		ft.injectCtl(5, ddpchunk.Control{Function: funcTerminate})
	}()
	_, err = a.Open(context.Background(), 5, OpenRequest{})
	assert.ErrorIs(t, err, ErrSessionTerminated)

	// Both sides' final chunks seen: stream 4 is free again at once.
	go func() {
		_, c := ft.nextCtl(t)
		assert.Equal(t, funcInitiate, c.Function)
		ft.injectCtl(4, ddpchunk.Control{Function: funcAccept})
	}()
	s, err := a.Open(context.Background(), 4, OpenRequest{})
	require.NoError(t, err)
	assert.Equal(t, uint16(4), s.Params().StreamID)
}

// RFC 6581 §7, §10: an enhanced request needs an enhanced reply.
func TestSession_EnhancedFlavourMismatch_RFC6581_10(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	go func() {
		_, c := ft.nextCtl(t)
		assert.Equal(t, funcEnhancedInitiate, c.Function)
		assert.Equal(t, iwarp.IRDORD{IRD: 8, ORD: 4}, c.IRDORD)
		ft.injectCtl(6, ddpchunk.Control{Function: funcAccept})
	}()
	_, err := a.Open(context.Background(), 6, OpenRequest{Enhanced: true, IRD: 8, ORD: 4})
	assert.ErrorIs(t, err, errProtocol)
}

// RFC 5043 §6.4: beyond the pending limit an Initiate gets a Terminate.
func TestSession_PendingLimit_RFC5043_6_4(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{MaxPendingInitiates: 2})
	for sid := uint16(1); sid <= 3; sid++ {
		ft.injectCtl(sid, ddpchunk.Control{Function: funcInitiate})
	}
	sid, c := ft.nextCtl(t)
	assert.Equal(t, uint16(3), sid)
	assert.Equal(t, ddpchunk.Control{SSN: 0, Function: funcTerminate}, c)
	in, err := a.Accept(context.Background())
	require.NoError(t, err)
	require.NoError(t, in.Reject([]byte("r")))
	_, c = ft.nextCtl(t)
	assert.Equal(t, ddpchunk.Control{Function: funcReject, PrivateData: []byte("r")}, c)
	assert.ErrorIs(t, in.Reject(nil), errIncomingDone)
	// A slot freed up: a fourth Initiate is taken.
	ft.injectCtl(10, ddpchunk.Control{Function: funcInitiate})
	ft.quiet(t)
}

// RFC 5043 §5.2.3: private data limits on the sending side.
func TestSession_OpenPrivateDataLimits_RFC5043_5_2_3(t *testing.T) {
	a, _ := newFakeAssoc(t, Config{})
	_, err := a.Open(context.Background(), 1, OpenRequest{PrivateData: make([]byte, 513)})
	assert.ErrorIs(t, err, errPrivateDataTooLong)
	_, err = a.Open(context.Background(), 1, OpenRequest{Enhanced: true, PrivateData: make([]byte, 509)})
	assert.ErrorIs(t, err, errPrivateDataTooLong)
	_, err = a.Open(context.Background(), 1, OpenRequest{Enhanced: true, IRD: 0x4000})
	assert.ErrorIs(t, err, iwarp.ErrInvalidIRDORD)
	_, err = a.Open(context.Background(), 64, OpenRequest{})
	assert.ErrorIs(t, err, backend.ErrStreamRange)
}

// RFC 5043 §9: MULPDU = MaxMessage − 2 − reserve, ≥ 516; larger segments
// are rejected.
func TestSession_MULPDU_RFC5043_9(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	assert.Equal(t, 1160-2-pmtu.BundlingReserve, a.MULPDU())
	s, _ := passiveSession(t, a, ft, 1)
	m := s.MULPDU()
	require.NoError(t, s.SendSegment(make([]byte, 14), make([]byte, m-14)))
	ft.next(t)
	err := s.SendSegment(make([]byte, 14), make([]byte, m-13))
	assert.ErrorIs(t, err, llp.ErrSegmentTooLarge)
	ft.maxMsg = 300
	assert.Equal(t, iwarp.SCTPMinMULPDU, a.MULPDU())
}

// Local Close: Terminate after the queued segments, delivery continues
// until the peer's Terminate (RFC 5043 §6.2).
func TestSession_LocalCloseThenPeerTerminate(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	s, h := passiveSession(t, a, ft, 1)
	require.NoError(t, s.Close())
	_, c := ft.nextCtl(t)
	assert.Equal(t, ddpchunk.Control{SSN: 1, Function: funcTerminate}, c)
	ft.injectSeg(1, 1, []byte("late"))
	ft.injectCtl(1, ddpchunk.Control{SSN: 2, Function: funcTerminate})
	require.NoError(t, h.waitClosed(t))
	assert.Equal(t, 1, h.count())
	ft.mu.Lock()
	assert.Contains(t, ft.resets, uint16(1))
	ft.mu.Unlock()
}

func TestSession_CloseLingerTimeout(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{Linger: 30 * time.Millisecond})
	s, h := passiveSession(t, a, ft, 1)
	require.NoError(t, s.Close())
	err := h.waitClosed(t)
	assert.ErrorIs(t, err, errCloseTimeout)
	assert.ErrorIs(t, err, llp.ErrClosed)
}

func TestSession_Abort(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	s, h := passiveSession(t, a, ft, 1)
	require.NoError(t, s.Abort())
	assert.ErrorIs(t, h.waitClosed(t), llp.ErrAborted)
	_, c := ft.nextCtl(t)
	assert.Equal(t, funcTerminate, c.Function)
	ft.injectSeg(1, 1, []byte("dropped"))
	assert.Zero(t, h.count())
	assert.ErrorIs(t, s.SendSegment(nil, []byte{1}), llp.ErrClosed)
}

// A handler error stops delivery (RFC 5041 §7.1) but not sending.
func TestSession_HandlerErrorStopsDelivery(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	s, h := passiveSession(t, a, ft, 1)
	h.failNext = true
	ft.injectSeg(1, 1, []byte("x"))
	ft.injectSeg(1, 2, []byte("y"))
	assert.Equal(t, 1, h.count())
	require.NoError(t, s.SendSegment(nil, []byte{1}))
}

func TestSession_MarkErroneous_RFC5040_7(t *testing.T) {
	ft := newFake(8)
	a := NewAssociation(ft, Config{})
	_, h1 := passiveSession(t, a, ft, 1)
	_, h2 := passiveSession(t, a, ft, 2)
	require.NoError(t, a.MarkErroneous(1))
	assert.ErrorIs(t, h1.waitClosed(t), errErroneous)
	_, c := ft.nextCtl(t)
	assert.Equal(t, funcTerminate, c.Function)
	_, err := a.Open(context.Background(), 1, OpenRequest{})
	assert.ErrorIs(t, err, errErroneous)
	select {
	case <-a.Done():
		t.Fatal("association ended with a live stream")
	default:
	}
	require.NoError(t, a.MarkErroneous(2))
	assert.ErrorIs(t, h2.waitClosed(t), errErroneous)
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("association not shut down after every stream became erroneous")
	}
	assert.NoError(t, a.Err())
}

// RFC 5043 §11.3: an association-wide failure reaches every session as
// llp.ErrAborted, with no per-stream Terminate.
func TestSession_AssociationFailure_RFC5043_11_3(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	_, h1 := passiveSession(t, a, ft, 1)
	_, h2 := passiveSession(t, a, ft, 2)
	cause := errors.New("peer gone")
	ft.end(cause)
	for _, h := range []*recHandler{h1, h2} {
		err := h.waitClosed(t)
		assert.ErrorIs(t, err, llp.ErrAborted)
		assert.ErrorIs(t, err, cause)
		var ae *AssociationError
		assert.ErrorAs(t, err, &ae)
	}
	ft.quiet(t)
	<-a.Done()
	assert.ErrorIs(t, a.Err(), cause)
	_, err := a.Open(context.Background(), 3, OpenRequest{})
	assert.ErrorIs(t, err, backend.ErrAssociationClosed)
}

// FuzzReceive feeds arbitrary chunks to the receive path of an
// association: whatever the peer sends, nothing panics.
func FuzzReceive(f *testing.F) {
	f.Add(uint16(1), uint32(17), []byte{0, 0, 0, 1}, []byte{0, 1, 0x41, 0})
	f.Add(uint16(2), uint32(16), []byte{0, 5, 1}, []byte{0, 0, 0, 4})
	f.Add(uint16(3), uint32(17), []byte{0, 0, 0, 5, 0x80, 1, 0, 1}, []byte{0, 2})
	f.Fuzz(func(t *testing.T, sid uint16, ppid uint32, m1, m2 []byte) {
		ft := newFake(8)
		ft.out = make(chan fakeMsg, 64)
		a := NewAssociation(ft, Config{KeepIdle: true})
		ft.fn(sid%8, ppid, m1)
		ft.fn(sid%8, backend.PPIDControl, m1)
		ft.fn(sid%8, backend.PPIDSegment, m2)
		ft.fn(sid%8, ppid, m2)
		ft.end(nil)
		<-a.Done()
	})
}

// TestSession_StreamLimit: the association uses only the stream
// identifiers it was configured for (Transport.NumStreams; pion offers
// 65535 in INIT whatever the limit). A peer's Initiate or segment on a
// stream beyond it is dropped and counted, never buffered, and no session
// is offered to the ULP (RFC 5043 §8: equal stream counts; issue 8's
// streams-per-association limit).
func TestSession_StreamLimit(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	require.Equal(t, 64, a.NumStreams())
	for sid := uint16(64); sid < 64+100; sid++ {
		ft.injectCtl(sid, ddpchunk.Control{SSN: 0, Function: funcInitiate})
		ft.injectSeg(sid, 1, make([]byte, 1000))
	}
	assert.Equal(t, uint64(200), a.droppedChunks())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := a.Accept(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no session offered")
	// Streams inside the limit still work.
	s, _ := passiveSession(t, a, ft, 63)
	assert.Equal(t, uint16(63), s.StreamID())
}

// A Session stays within Go's 320-octet size class, since every idle
// stream has one at each end (issue 21: at most 4 KiB per idle stream for
// both ends).
func TestSession_SizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(session{}), uintptr(320))
}
