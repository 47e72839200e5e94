package sctpllp

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// noIncoming asserts that Accept offers nothing within a short wait.
func noIncoming(t *testing.T, a *Association) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	in, err := a.Accept(ctx)
	if in != nil {
		t.Fatalf("Accept offered stream %d", in.StreamID)
	}
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no session offered")
}

// acceptWithin waits at most 5 s for Accept.
func acceptWithin(t *testing.T, a *Association) *Incoming {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in, err := a.Accept(ctx)
	require.NoError(t, err)
	return in
}

// openAccepted opens sid as the active side against the fake peer, which
// accepts; it checks the Initiate and returns the session.
func openAccepted(t *testing.T, a *Association, ft *fakeTransport, sid uint16) Session {
	t.Helper()
	go func() {
		gsid, c := ft.nextCtl(t)
		assert.Equal(t, sid, gsid)
		assert.Equal(t, uint16(0), c.SSN)
		assert.Equal(t, funcInitiate, c.Function)
		ft.injectCtl(sid, ddpchunk.Control{SSN: 0, Function: funcAccept})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := a.Open(ctx, sid, OpenRequest{})
	require.NoError(t, err, "stream %d free for reuse", sid)
	return s
}

// TestSession_WithdrawnInitiateArrivingFirst_RFC5043_6_6: the initiator
// withdraws its Initiate (DDP-SSN 0) with a Terminate (DDP-SSN 1); all
// chunks are unordered (RFC 5043 §10), so the Terminate can arrive first.
// Session control messages carry the DDP-SSN like segments (§5.2.1: "All
// SCTP Payload Data Chunks used by this adaptation layer include a
// DDP-SSN"; §5.2.3) and the session is considered in DDP-SSN order (§6.1),
// so the receiver processes Initiate then Terminate whatever the arrival
// order: the ULP is never offered the withdrawn stream, nothing is sent in
// reply, and the stream is free for a new session at once.
func TestSession_WithdrawnInitiateArrivingFirst_RFC5043_6_6(t *testing.T) {
	for _, tc := range []struct {
		name      string
		termFirst bool
	}{
		{"Terminate first", true},
		{"in order", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ft := newFakeAssoc(t, Config{QuietTime: time.Hour})
			initiate := ddpchunk.Control{SSN: 0, Function: funcInitiate, PrivateData: []byte("req")}
			terminate := ddpchunk.Control{SSN: 1, Function: funcTerminate}
			if tc.termFirst {
				ft.injectCtl(2, terminate)
				ft.injectCtl(2, initiate)
			} else {
				ft.injectCtl(2, initiate)
				ft.injectCtl(2, terminate)
			}
			noIncoming(t, a)
			ft.quiet(t)
			// Both sides' final chunks are seen: the identifier is free
			// for either side (RFC 5043 §6.6).
			s := openAccepted(t, a, ft, 2)
			require.NoError(t, s.Abort())
			ft.nextCtl(t)
			ft.injectCtl(2, ddpchunk.Control{SSN: 1, Function: funcTerminate})
			ft.injectCtl(2, ddpchunk.Control{SSN: 0, Function: funcInitiate, PrivateData: []byte("again")})
			in := acceptWithin(t, a)
			assert.Equal(t, []byte("again"), in.PrivateData)
		})
	}
}

// RFC 5043 §6.1: early chunks of every kind wait for the Initiate and are
// then taken in DDP-SSN order: segments sent before the Initiate was
// received are delivered after Start, in order.
func TestSession_ChunksBeforeInitiate_RFC5043_6_1(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{})
	ft.injectSeg(4, 2, []byte("b"))
	ft.injectSeg(4, 1, []byte("a"))
	noIncoming(t, a)
	_, err := a.Open(context.Background(), 4, OpenRequest{})
	assert.ErrorIs(t, err, backend.ErrStreamInUse, "the peer's session is starting there")
	ft.injectCtl(4, ddpchunk.Control{SSN: 0, Function: funcInitiate})
	in := acceptWithin(t, a)
	s, err := in.Accept(AcceptParams{})
	require.NoError(t, err)
	ft.nextCtl(t)
	h := newRec()
	s.Start(h)
	assert.Equal(t, [][]byte{[]byte("a"), []byte("b")}, h.segs)
	ft.injectCtl(4, ddpchunk.Control{SSN: 3, Function: funcTerminate})
	require.NoError(t, h.waitClosed(t))
	sid, c := ft.nextCtl(t)
	assert.Equal(t, uint16(4), sid)
	assert.Equal(t, ddpchunk.Control{SSN: 1, Function: funcTerminate}, c, "our final chunk (§6.2)")

	// An Accept held before an Initiate breaks §6.2 once in order.
	ft.injectCtl(5, ddpchunk.Control{SSN: 1, Function: funcAccept})
	ft.injectCtl(5, ddpchunk.Control{SSN: 0, Function: funcInitiate})
	sid, c = ft.nextCtl(t)
	assert.Equal(t, uint16(5), sid)
	assert.Equal(t, ddpchunk.Control{SSN: 0, Function: funcTerminate}, c)
	noIncoming(t, a)
}

// RFC 5043 §6.1, §6.6: early chunks whose Initiate does not come within
// the quiet time belong to no session. Segments are answered as a chunk on
// a stream without a session (a Terminate, then quarantine); a held
// Terminate alone needs no answer. Either way the stream is usable again.
func TestSession_EarlyChunksWithoutInitiate_RFC5043_6_1(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{QuietTime: 50 * time.Millisecond})
	ft.injectSeg(6, 3, []byte("stray"))
	ft.injectCtl(7, ddpchunk.Control{SSN: 9, Function: funcTerminate})
	sid, c := ft.nextCtl(t)
	assert.Equal(t, uint16(6), sid)
	assert.Equal(t, ddpchunk.Control{SSN: 0, Function: funcTerminate}, c)
	ft.quiet(t)
	time.Sleep(60 * time.Millisecond)
	s6 := openAccepted(t, a, ft, 6)
	openAccepted(t, a, ft, 7)

	// On a stream that carried a session, such chunks are taken for late
	// chunks of that session: dropped without an answer.
	require.NoError(t, s6.Abort())
	ft.nextCtl(t)
	ft.injectCtl(6, ddpchunk.Control{SSN: 1, Function: funcTerminate})
	ft.injectSeg(6, 5, []byte("late"))
	time.Sleep(60 * time.Millisecond)
	ft.quiet(t)
	openAccepted(t, a, ft, 6)
}

// The chunks held before an Initiate are bounded: at most
// Config.MaxPendingInitiates streams wait for their Initiate (RFC 5043
// §10: no resources before a validity check); beyond that a chunk on a
// stream without a session is answered at once as before.
func TestSession_EarlyChunkStreamsBounded_RFC5043_10(t *testing.T) {
	a, ft := newFakeAssoc(t, Config{MaxPendingInitiates: 2, QuietTime: time.Hour})
	ft.injectSeg(1, 1, []byte("x"))
	ft.injectSeg(2, 1, []byte("x"))
	ft.quiet(t)
	ft.injectSeg(3, 1, []byte("x"))
	sid, c := ft.nextCtl(t)
	assert.Equal(t, uint16(3), sid)
	assert.Equal(t, ddpchunk.Control{SSN: 0, Function: funcTerminate}, c)
	ft.injectCtl(1, ddpchunk.Control{SSN: 0, Function: funcInitiate})
	in := acceptWithin(t, a)
	assert.Equal(t, uint16(1), in.StreamID)
}

// TestSession_WithdrawWaitsForReply_RFC5043_6_6: an Open whose context ends
// before the peer replied must not send its withdrawing Terminate at once:
// "A DDP Stream Session Control message MUST NOT be sent if it may be
// received before a prior DDP Stream Session Control message within the
// same DDP Stream Session" (RFC 5043 §6.6), and the Initiate may still be
// in flight. The Terminate goes out once the peer's reply shows the
// Initiate arrived ("by receipt of a responsive DDP Stream Session Control
// message", §6.6): after an Accept; after a Reject or the peer's own
// Terminate nothing is sent, the session being over (§6.3, §6.4). Open
// returns the context's error at once in every case.
func TestSession_WithdrawWaitsForReply_RFC5043_6_6(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reply     functionCode
		terminate bool // our Terminate follows the reply
	}{
		{"Accept", funcAccept, true},
		{"Reject", funcReject, false},
		{"Terminate", funcTerminate, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ft := newFakeAssoc(t, Config{QuietTime: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				s, err := a.Open(ctx, 3, OpenRequest{PrivateData: []byte("req")})
				if s != nil {
					_ = s.Abort()
				}
				errc <- err
			}()
			sid, c := ft.nextCtl(t)
			require.Equal(t, uint16(3), sid)
			require.Equal(t, funcInitiate, c.Function)
			cancel()
			select {
			case err := <-errc:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(5 * time.Second):
				t.Fatal("Open did not return after its context ended")
			}
			// The Initiate may not have arrived: nothing may follow it yet.
			ft.quiet(t)

			ft.injectCtl(3, ddpchunk.Control{SSN: 0, Function: tc.reply})
			if tc.terminate {
				sid, c := ft.nextCtl(t)
				assert.Equal(t, uint16(3), sid)
				assert.Equal(t, funcTerminate, c.Function)
				assert.Equal(t, uint16(1), c.SSN, "the Terminate follows the Initiate in DDP-SSN order")
				ft.injectCtl(3, ddpchunk.Control{SSN: 1, Function: funcTerminate})
			}
			ft.quiet(t)
			// Both sides' final chunks were seen: the identifier is free
			// again (RFC 5043 §6.6).
			s := openAccepted(t, a, ft, 3)
			require.NoError(t, s.Abort())
			ft.nextCtl(t)
		})
	}
}
