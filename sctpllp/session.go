package sctpllp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/ddpchunk"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/sessionsm"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/bufpool"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/pmtu"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/internal/reseq"
)

// Params are the values negotiated by a session's set-up, available from
// Session.Params.
type Params struct {
	// StreamID is the SCTP stream identifier of the DDP stream.
	StreamID uint16
	// Active is true on the side that sent the Initiate.
	Active bool
	// Enhanced is true for a session set up with the RFC 6581 codes.
	Enhanced bool
	// PeerPrivateData is the private data of the peer's Initiate (passive
	// side) or Accept (active side), without the IRD/ORD word.
	PeerPrivateData []byte
	// PeerIRDORD is the peer's IRD/ORD word (enhanced sessions only). The
	// ULP applies RFC 6581 §9.1: the initiator sets its IRD at least to the
	// responder ORD and its ORD at most to the responder IRD.
	PeerIRDORD iwarp.IRDORD
	// LocalIRDORD is the IRD/ORD word this side sent.
	LocalIRDORD iwarp.IRDORD
}

// Session is one DDP Stream Session on one SCTP stream pair (RFC 5043 §6),
// from Association.Open or Incoming.Accept: the llp.Stream DDP runs over,
// with llp.Batcher and llp.Floored (MULPDU is never below 516, §9).
//
// Every chunk sent carries the next DDP-SSN of the session, starting at 0
// with the Initiate or the Accept/Reject and without gaps (RFC 5043 §5.2.1,
// §6.1); DDP segments are sent as PPID 16 and session control as PPID 17,
// all unordered (§10). Received chunks are re-sequenced by DDP-SSN and
// checked against the legal sequences of §6.2–§6.4; a violation terminates
// this session only.
type Session interface {
	llp.Stream
	llp.Batcher
	llp.Floored
	// Params returns the values negotiated at set-up.
	Params() Params
	// StreamID returns the SCTP stream identifier.
	StreamID() uint16
}

// session is the Session of one stream.
type session struct {
	a     *Association
	sl    *slot
	sid   uint16
	state atomic.Uint32 // sessionsm.State; written under mu
	// The fields are ordered so that the flags share words: an idle
	// stream costs its session at each end.
	params Params

	mu        sync.Mutex
	sentFinal bool
	rxFinal   bool
	resetDone bool
	counted   bool // counted in Association.live
	// withdrawing: the active side's Open ended before the reply; the
	// Terminate that withdraws it waits for that reply (RFC 5043 §6.6).
	withdrawing bool
	// A passive session started by chunks that precede its Initiate
	// (Association.startSession): earlyCounted while it is counted in
	// Association.early, earlyTimer (below) ends the wait, earlyFresh
	// when the stream never carried a session before.
	earlyCounted bool
	earlyFresh   bool
	// handed: the ULP has the Session (Open returned it, or Accept), so a
	// Start may still come.
	handed     bool
	finalAt    time.Duration // since sessionEpoch: when our final chunk went out
	closeErr   error
	linger     *time.Timer
	openRes    chan error // active side: reply to the Initiate
	incoming   *Incoming  // passive side, until decided
	earlyTimer *time.Timer

	// gapTimer runs while chunks are held waiting for a missing DDP-SSN
	// (Config.MaxGapTime); guarded by sl.rxMu.
	gapTimer *time.Timer
	// Receive side, guarded by sl.rxMu.
	ro       reseq.Reorder
	h        llp.Handler
	started  bool
	rxBroken bool
	closedOK bool      // HandleClosed delivered
	queued   int32     // octets charged for queue (at most MaxHeldBytes, capped at 2^31-1)
	queue    []*[]byte // segments received before Start
	// unoffered is the Incoming of an Initiate just admitted, handed to
	// Accept by offerIncoming.
	unoffered *Incoming

	closePending atomic.Bool

	// Send side, guarded by txMu.
	txMu        sync.Mutex
	txSSN       uint16
	ssnBuf      [pmtu.DDPSSNLen]byte
	parts       *[3][]byte // WriteMsg's arguments, made by the first send (64 octets an idle session does without)
	termSent    bool
	termPending atomic.Bool
	sendClosed  atomic.Bool

	segsSent, segsRcvd, bytesSent, bytesRcvd atomic.Uint64
}

var _ Session = (*session)(nil)

func newSession(a *Association, sl *slot, active bool) *session {
	s := &session{a: a, sl: sl, sid: sl.sid}
	s.params.StreamID = sl.sid
	s.params.Active = active
	s.ro = reseq.New(s.deliverChunk, a.cfg.MaxHeldBytes, &a.held)
	return s
}

// sessionEpoch is the origin of Session.finalAt: a duration (8 octets)
// where a time.Time takes 24, in a struct each idle stream has at both
// ends; both read the monotonic clock.
var sessionEpoch = time.Now()

func (s *session) st() sessionsm.State { return sessionsm.State(s.state.Load()) }

// setState changes the state; the caller holds s.mu.
func (s *session) setState(st sessionsm.State) { s.state.Store(uint32(st)) }

// Params returns the values negotiated at set-up.
func (s *session) Params() Params { return s.params }

// StreamID returns the SCTP stream identifier.
func (s *session) StreamID() uint16 { return s.sid }

// MULPDU implements llp.Stream: the transport's largest unfragmented
// message less the DDP-SSN and BundlingReserve, never below 516
// (RFC 5043 §9).
func (s *session) MULPDU() int { return s.a.MULPDU() }

// MULPDUFloor implements llp.Floored: MULPDU is never below
// iwarp.SCTPMinMULPDU (RFC 5043 §9).
func (s *session) MULPDUFloor() int { return iwarp.SCTPMinMULPDU }

// WireSize is a Stream's optional WireSize (package llp): on a transport that sends runs of
// packets (backend.MoreWriter: sctp-native), a segment of n octets takes
// its DDP-SSN and n octets, in a DATA chunk padded to four octets (RFC
// 9260 §3.2); elsewhere 0.
func (s *session) WireSize(n int) int {
	if s.a.more == nil {
		return 0
	}
	return (dataChunkHeaderLen + len(s.ssnBuf) + n + 3) &^ 3
}

// dataChunkHeaderLen is the DATA chunk's header (RFC 9260 §3.3.1).
const dataChunkHeaderLen = 16

// SendSegment implements llp.Stream: hdr and payload go out as one DDP
// Segment Chunk (RFC 5043 §5.2.2) with the next DDP-SSN.
func (s *session) SendSegment(hdr, payload []byte) error {
	return s.sendSegment(hdr, payload, false)
}

// SendSegmentMore implements llp.Batcher: on a transport that can send
// several messages together (backend.MoreWriter), the DDP Segment Chunk
// may wait for the message's last segment; elsewhere it is SendSegment.
func (s *session) SendSegmentMore(hdr, payload []byte) error {
	return s.sendSegment(hdr, payload, s.a.more != nil)
}

// Flush implements llp.Batcher: what SendSegmentMore left waiting in the
// transport (on any stream of the association) is sent now.
func (s *session) Flush() error {
	if s.a.more == nil {
		return nil
	}
	return s.a.more.Flush()
}

func (s *session) sendSegment(hdr, payload []byte, more bool) error {
	n := len(hdr) + len(payload)
	// No MULPDU is below iwarp.SCTPMinMULPDU (RFC 5043 §9): a segment that fits
	// in it needs no look at the transport's current maximum.
	if n > iwarp.SCTPMinMULPDU {
		if err := s.a.checkSegment(n); err != nil {
			return err
		}
	}
	if s.sendClosed.Load() {
		return s.sendErr()
	}
	s.txMu.Lock()
	if st := s.st(); st != sessionsm.Established || s.sendClosed.Load() {
		s.txMu.Unlock()
		return s.sendErr()
	}
	binary.BigEndian.PutUint16(s.ssnBuf[:], s.txSSN)
	if s.parts == nil {
		s.parts = new([3][]byte)
	}
	s.parts[0], s.parts[1], s.parts[2] = s.ssnBuf[:], hdr, payload
	var err error
	if more {
		err = s.a.more.WriteMsgMore(s.sid, backend.PPIDSegment, s.parts[:]...)
	} else {
		err = s.a.t.WriteMsg(s.sid, backend.PPIDSegment, s.parts[:]...)
	}
	s.parts[1], s.parts[2] = nil, nil
	if err == nil {
		s.txSSN++
	}
	s.txMu.Unlock()
	if s.termPending.Load() {
		s.flushTerminate()
	}
	if err != nil {
		return s.sendFailed(err)
	}
	s.segsSent.Add(1)
	s.bytesSent.Add(uint64(n))
	return nil
}

// sendFailed is the error of a segment the transport refused.
func (s *session) sendFailed(err error) error {
	return fmt.Errorf("sctpllp: stream %d: %w", s.sid, err)
}

func (s *session) sendErr() error {
	s.mu.Lock()
	err := s.closeErr
	s.mu.Unlock()
	if err != nil && !errors.Is(err, llp.ErrClosed) {
		return fmt.Errorf("%w: stream %d: %w", llp.ErrClosed, s.sid, err)
	}
	return fmt.Errorf("%w: stream %d", llp.ErrClosed, s.sid)
}

// sendControl writes a session control message with the next DDP-SSN; the
// caller holds txMu.
func (s *session) sendControlLocked(c ddpchunk.Control) error {
	c.SSN = s.txSSN
	var buf [ddpchunk.HeaderLen + iwarpwire.IRDORDLen + ddpchunk.MaxPrivateData]byte
	b := c.Append(buf[:0])
	if err := s.a.t.WriteMsg(s.sid, backend.PPIDControl, b); err != nil {
		return err
	}
	s.a.ctr.control(true, c.Function)
	s.txSSN++
	return nil
}

// requestTerminate arranges for a DDP Stream Session Terminate to be sent
// after any SendSegment in progress (RFC 5041 §6.2.1: after what was
// already handed to the LLP).
func (s *session) requestTerminate() {
	s.sendClosed.Store(true)
	s.termPending.Store(true)
	s.flushTerminate()
}

func (s *session) flushTerminate() {
	for s.termPending.Load() {
		if !s.txMu.TryLock() {
			return // the holder flushes after it unlocks
		}
		send := s.termPending.Swap(false) && !s.termSent
		if send {
			s.termSent = true
			_ = s.sendControlLocked(ddpchunk.Control{Function: funcTerminate})
		}
		s.txMu.Unlock()
		if send {
			s.markSentFinal()
		}
	}
}

// markSentFinal records that this side sent its last chunk and resets the
// outgoing stream (RFC 6525 where supported).
func (s *session) markSentFinal() {
	s.mu.Lock()
	if s.sentFinal {
		s.mu.Unlock()
		return
	}
	s.sentFinal = true
	s.finalAt = time.Since(sessionEpoch)
	s.mu.Unlock()
	s.resetStream()
}

func (s *session) resetStream() {
	s.mu.Lock()
	if s.resetDone {
		s.mu.Unlock()
		return
	}
	s.resetDone = true
	s.mu.Unlock()
	_ = s.a.t.ResetStream(s.sid)
}

// over reports whether the session no longer holds its stream identifier:
// it is done, our final chunk is out and the peer's final chunk was seen or
// the quiet time has passed since ours (RFC 5043 §6.6).
func (s *session) over(now time.Time, quiet time.Duration) bool {
	if s.st() != sessionsm.Done {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentFinal && (s.rxFinal || now.Sub(sessionEpoch)-s.finalAt >= quiet)
}

// Start implements llp.Stream.
func (s *session) Start(h llp.Handler) {
	s.sl.rxMu.Lock()
	if s.h != nil {
		s.sl.rxMu.Unlock()
		panic("sctpllp: Session.Start called twice")
	}
	s.h = h
	for len(s.queue) > 0 {
		bp := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		c := reseq.HeldCost(cap(*bp)) + queueEntryCost
		s.queued -= int32(c)
		s.a.held.Release(c)
		if !s.rxBroken {
			if err := h.HandleSegment(*bp); err != nil {
				s.rxBroken = true
			}
		}
		bufpool.Put(bp)
	}
	s.queue = nil
	s.started = true
	s.sl.rxMu.Unlock()
	s.deliverClosed()
}

// dropQueue frees the segments received before a Start that will not
// come; the caller holds sl.rxMu.
func (s *session) dropQueue() {
	for i, bp := range s.queue {
		s.a.held.Release(reseq.HeldCost(cap(*bp)) + queueEntryCost)
		bufpool.Put(bp)
		s.queue[i] = nil
	}
	s.queue, s.queued = nil, 0
}

// deliverClosed calls HandleClosed once the session has ended, exactly
// once, after the last HandleSegment, never concurrently with it.
func (s *session) deliverClosed() {
	for s.closePending.Load() {
		if !s.sl.rxMu.TryLock() {
			return // the holder calls deliverClosed after unlocking
		}
		var (
			h   llp.Handler
			err error
		)
		if s.closePending.Load() {
			s.ro.Release() // gives the association's budget back
			if s.gapTimer != nil {
				s.gapTimer.Stop()
				s.gapTimer = nil
			}
			s.mu.Lock()
			handed := s.handed
			s.mu.Unlock()
			if !s.started && (!handed || s.a.gone.Load()) {
				s.dropQueue() // no Start will deliver them
			}
		}
		if s.started && !s.closedOK && s.closePending.Load() {
			s.closedOK = true
			h = s.h
			s.mu.Lock()
			err = s.closeErr
			s.mu.Unlock()
		}
		if h != nil {
			h.HandleClosed(err)
		}
		s.sl.rxMu.Unlock()
		return
	}
}

// withdraw ends an Open whose context ended before the peer replied to the
// Initiate in res. The Initiate may still be in flight, and "a DDP Stream
// Session Control message MUST NOT be sent if it may be received before a
// prior DDP Stream Session Control message" (RFC 5043 §6.6): the
// withdrawing Terminate waits for "a responsive DDP Stream Session Control
// message" (§6.6). After an Accept it is sent (deliverChunk); after a
// Reject or the peer's Terminate nothing is (§6.3, §6.4). Until the reply
// the stream identifier stays in use; the association's end ends the wait.
func (s *session) withdraw(res chan error) {
	s.mu.Lock()
	if s.openRes != nil {
		s.openRes = nil
		s.withdrawing = true
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	// The reply (or the session's end) raced with the cancellation and is
	// in res: after an Accept the session is established and the
	// Terminate is safe; any other outcome already ended it.
	if err := <-res; err == nil {
		s.requestTerminate()
		s.finish(fmt.Errorf("%w: stream %d: Open withdrawn", llp.ErrClosed, s.sid))
	}
}

// finish ends the session with cause err (nil: graceful) and reports the
// end upward once. It does not send anything.
func (s *session) finish(err error) {
	s.endEarly()
	s.mu.Lock()
	if s.closePending.Load() {
		s.mu.Unlock()
		return
	}
	s.setState(sessionsm.Done)
	s.closeErr = err
	if s.linger != nil {
		s.linger.Stop()
	}
	res := s.openRes
	s.openRes = nil
	in := s.incoming
	s.incoming = nil
	counted := s.counted
	s.counted = false
	s.closePending.Store(true)
	s.mu.Unlock()
	s.sendClosed.Store(true)
	if res != nil {
		if err == nil {
			err = fmt.Errorf("%w: stream %d", llp.ErrClosed, s.sid)
		}
		res <- err
	}
	if in != nil {
		s.a.incomingDone()
	}
	s.deliverClosed()
	if counted {
		s.a.sessionEnded()
	}
}

// Close implements llp.Stream: a DDP Stream Session Terminate follows the
// segments already handed to SendSegment, then the outgoing stream is
// reset. Segments from the peer are delivered until its Terminate, which
// ends the session with HandleClosed(nil); without one within
// Config.Linger the session ends with errCloseTimeout.
func (s *session) Close() error {
	s.mu.Lock()
	switch s.st() {
	case sessionsm.Established:
		s.setState(sessionsm.LocalClosed)
		s.linger = time.AfterFunc(s.a.cfg.Linger, func() {
			if s.st() == sessionsm.LocalClosed {
				s.finish(fmt.Errorf("%w: %w", llp.ErrClosed, errCloseTimeout))
			}
		})
		s.mu.Unlock()
		s.requestTerminate()
		return nil
	case sessionsm.Done, sessionsm.LocalClosed:
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.requestTerminate()
	s.finish(fmt.Errorf("%w: closed before establishment", llp.ErrClosed))
	return nil
}

// Abort implements llp.Stream: no further segment is sent, a Terminate
// goes out at once (after a SendSegment already in progress), and the
// receive side ends now with an error wrapping llp.ErrAborted.
func (s *session) Abort() error {
	s.sendClosed.Store(true)
	if s.st() == sessionsm.Done && s.closePending.Load() {
		s.requestTerminateIfUnsent()
		return nil
	}
	s.requestTerminate()
	s.finish(fmt.Errorf("%w: stream %d aborted locally", llp.ErrAborted, s.sid))
	return nil
}

func (s *session) requestTerminateIfUnsent() {
	s.mu.Lock()
	sent := s.sentFinal
	s.mu.Unlock()
	if !sent {
		s.requestTerminate()
	}
}

// fail terminates the session after a protocol violation by the peer
// (RFC 5043 §6.1: "the DDP Stream Session MUST be terminated").
func (s *session) fail(err error) {
	s.requestTerminate()
	s.finish(err)
}

// Info implements llp.Stream.
func (s *session) Info() llp.Info {
	i := llp.Info{
		Kind:             s.a.t.Kind(),
		StreamID:         s.sid,
		SegmentsSent:     s.segsSent.Load(),
		SegmentsReceived: s.segsRcvd.Load(),
		BytesSent:        s.bytesSent.Load(),
		BytesReceived:    s.bytesRcvd.Load(),
	}
	if la := s.a.t.LocalAddr(); la != nil {
		i.LocalAddr = la.String()
	}
	if ra := s.a.t.RemoteAddr(); ra != nil {
		i.RemoteAddr = ra.String()
	}
	return i
}

// receive handles one chunk of this session; the caller holds sl.rxMu.
func (s *session) receive(ppid uint32, b []byte) {
	// The data path: the next DDP Segment Chunk in DDP-SSN order of an
	// established session with nothing held early goes straight to DDP
	// (what reseq.Reorder.Push and deliverChunk would do with it, without their
	// other cases; RFC 5043 §6.1, §10). An Initiate is never offered
	// from here, so offerIncoming has nothing to do.
	if ppid == backend.PPIDSegment && len(b) >= pmtu.DDPSSNLen && s.st() == sessionsm.Established && s.ro.InOrder(binary.BigEndian.Uint16(b)) {
		if err := s.deliverSegment(b[pmtu.DDPSSNLen:]); err != nil {
			s.rxFailed(err)
		}
		return
	}
	if s.st() == sessionsm.Done {
		s.receiveWhileDone(ppid, b)
		return
	}
	ssn := binary.BigEndian.Uint16(b)
	err := s.ro.Push(ssn, ppid, b)
	if errors.Is(err, errMemoryShare) {
		s.rxFailed(err)
	} else if err != nil && !errors.Is(err, errSessionOver) {
		var pe *protocolError
		if !errors.As(err, &pe) {
			err = &protocolError{StreamID: s.sid, Reason: "invalid DDP-SSN (RFC 5043 §10)", Err: err}
		}
		s.fail(err)
	} else if !s.ro.GapSince().IsZero() && s.gapTimer == nil && s.st() != sessionsm.Done {
		s.gapTimer = time.AfterFunc(s.a.cfg.MaxGapTime, s.checkGap)
	}
	s.offerIncoming()
}

// rxFailed ends the session after an error of its receive path: a peer
// over the association's memory share loses the association (overShare:
// an ABORT, no Session Terminate), any other error terminates this session.
func (s *session) rxFailed(err error) {
	if errors.Is(err, errMemoryShare) {
		s.a.overShare(err)
		s.sendClosed.Store(true)
		s.finish(&AssociationError{Err: fmt.Errorf("%w: %w", llp.ErrAborted, err)})
		return
	}
	s.fail(err)
}

// checkGap ends the session when the DDP-SSN it waits for has been
// missing for Config.MaxGapTime while later chunks are held (RFC 5043 §10:
// a sender never leaves a gap that long; a peer that does holds our
// memory).
func (s *session) checkGap() {
	s.sl.rxMu.Lock()
	since := s.ro.GapSince()
	var fail bool
	switch {
	case s.gapTimer == nil || s.st() == sessionsm.Done:
	case since.IsZero():
		s.gapTimer = nil
	case time.Since(since) >= s.a.cfg.MaxGapTime:
		s.gapTimer = nil
		fail = true
	default:
		s.gapTimer.Reset(s.a.cfg.MaxGapTime - time.Since(since))
	}
	if fail {
		s.a.ctr.gapTimeouts.Add(1)
		s.fail(&protocolError{StreamID: s.sid, Err: errHeldLimit,
			Reason: fmt.Sprintf("DDP-SSN %d missing for %v while later chunks are held (Config.MaxGapTime, RFC 5043 §10)", s.ro.Next(), s.a.cfg.MaxGapTime)})
	}
	s.sl.rxMu.Unlock()
	if fail {
		s.deliverClosed()
	}
}

// offerIncoming hands an Initiate admitted by the chunks just processed to
// Accept, unless those chunks also ended the session: a Terminate that
// arrived before its Initiate withdraws it in DDP-SSN order (RFC 5043
// §6.1), and the ULP never sees it. The caller holds sl.rxMu.
func (s *session) offerIncoming() {
	in := s.unoffered
	if in == nil {
		return
	}
	s.unoffered = nil
	if s.st() != sessionsm.InitReceived {
		return
	}
	select {
	case s.a.incoming <- in:
	default:
		// Withdrawn Initiates not yet taken by Accept still occupy the
		// queue: treat a full queue as the limit of RFC 5043 §6.4 too.
		s.mu.Lock()
		s.incoming = nil
		s.setState(sessionsm.Done)
		s.mu.Unlock()
		s.a.incomingDone()
		s.requestTerminate()
		s.finish(fmt.Errorf("%w: too many pending Initiates", llp.ErrClosed))
	}
}

// endEarly ends the wait of a session started by chunks that precede its
// Initiate: its first chunk in DDP-SSN order was processed, or it ended.
func (s *session) endEarly() {
	s.mu.Lock()
	counted := s.earlyCounted
	s.earlyCounted = false
	if s.earlyTimer != nil {
		s.earlyTimer.Stop()
		s.earlyTimer = nil
	}
	s.mu.Unlock()
	if counted {
		s.a.earlyDone()
	}
}

// expireEarly runs QuietTime after the first chunk of a session whose
// Initiate has not arrived: its chunks belong to no session. A chunk
// delayed longer than the quiet time is not expected (RFC 5043 §6.6), so
// they are taken for late chunks of an earlier session and dropped; on a
// stream that never carried a session, chunks other than a Terminate are
// answered with a Terminate and the stream is quarantined, as for a chunk
// on a stream without a session (§6.1).
func (s *session) expireEarly() {
	s.sl.rxMu.Lock()
	if s.st() != sessionsm.Idle || s.closePending.Load() {
		s.sl.rxMu.Unlock()
		return
	}
	s.mu.Lock()
	fresh := s.earlyFresh
	s.mu.Unlock()
	onlyTerminates := s.ro.HeldAll(func(ppid uint32, chunk []byte) bool {
		c, _, err := ddpchunk.ParseControl(chunk)
		return ppid == backend.PPIDControl && err == nil && c.Function == funcTerminate
	})
	s.ro.Release()
	if fresh && !onlyTerminates {
		s.fail(&protocolError{StreamID: s.sid,
			Reason: "chunks on a stream without a session and no Initiate within the quiet time (RFC 5043 §6.1)"})
	} else {
		// Nothing to answer: the stream is free at once.
		s.mu.Lock()
		s.sentFinal, s.rxFinal, s.resetDone = true, true, true
		s.finalAt = time.Since(sessionEpoch)
		s.mu.Unlock()
		s.finish(fmt.Errorf("%w: stream %d: chunks without a session dropped", llp.ErrClosed, s.sid))
	}
	s.sl.rxMu.Unlock()
	s.deliverClosed()
}

// receiveWhileDone drops chunks of an ended session, noting the peer's
// Terminate (its final chunk, for the quarantine of RFC 5043 §6.6).
func (s *session) receiveWhileDone(ppid uint32, b []byte) {
	if ppid != backend.PPIDControl {
		return
	}
	c, _, err := ddpchunk.ParseControl(b)
	if err == nil && (c.Function == funcTerminate || ddpchunk.Base(c.Function) == funcReject) {
		s.mu.Lock()
		s.rxFinal = true
		s.mu.Unlock()
	}
}

// deliverChunk is the session's reseq.Sink: one chunk in DDP-SSN order.
func (s *session) deliverChunk(ssn uint16, ppid uint32, chunk []byte) error {
	// The data path: a segment of an established session (transition's
	// sessionsm.ActDeliver, RFC 5043 §6.1) goes to DDP without the state machine's
	// other cases, whose code and stack (a Control, 300 octets) a
	// message would otherwise pass through.
	if ppid == backend.PPIDSegment && s.st() == sessionsm.Established {
		return s.deliverSegment(chunk[pmtu.DDPSSNLen:])
	}
	return s.deliverChunkSM(ssn, ppid, chunk)
}

// deliverChunkSM delivers a chunk through the session's state machine
// (package sessionsm).
func (s *session) deliverChunkSM(ssn uint16, ppid uint32, chunk []byte) error {
	var (
		ev   sessionsm.Event
		ctrl ddpchunk.Control
	)
	switch ppid {
	case backend.PPIDSegment:
		ev = sessionsm.EvSegment
	case backend.PPIDControl:
		c, _, err := ddpchunk.ParseControl(chunk)
		if err != nil {
			return &protocolError{StreamID: s.sid, Reason: "malformed session control (RFC 5043 §5.2.3)", Err: err}
		}
		ctrl = c
		ev = eventOf(c.Function)
		s.a.ctr.control(false, c.Function)
	default:
		return &protocolError{StreamID: s.sid,
			Reason: fmt.Sprintf("PPID %d on a DDP association (RFC 5043 §5.1, §5.2)", ppid)}
	}
	st := s.st()
	if st == sessionsm.Idle {
		s.endEarly() // the chunk with DDP-SSN 0 is here
	}
	next, act := sessionsm.Transition(st, ev, s.params.Enhanced, ddpchunk.Enhanced(ctrl.Function))
	switch act {
	case sessionsm.ActViolation:
		what := "DDP segment"
		if ev != sessionsm.EvSegment {
			what = ctrl.Function.String()
		}
		return &protocolError{StreamID: s.sid,
			Reason: fmt.Sprintf("%s with DDP-SSN %d in state %v (RFC 5043 §6.1)", what, ssn, st)}
	case sessionsm.ActDeliver:
		return s.deliverSegment(chunk[pmtu.DDPSSNLen:])
	case sessionsm.ActNewSession:
		return s.a.onInitiate(s, ctrl)
	case sessionsm.ActEstablish:
		s.mu.Lock()
		s.params.PeerPrivateData = append([]byte(nil), ctrl.PrivateData...)
		s.params.PeerIRDORD = ctrl.IRDORD
		s.setState(next)
		s.handed = s.openRes != nil // Open returns the session
		res := s.openRes
		s.openRes = nil
		withdrawn := s.withdrawing
		s.mu.Unlock()
		if withdrawn {
			// The Accept shows the Initiate arrived, so the withdrawing
			// Terminate can no longer overtake it (RFC 5043 §6.6). The
			// session never served the ULP: it does not count for the
			// shutdown rule of RFC 5040 §7.
			s.requestTerminate()
			s.finish(fmt.Errorf("%w: stream %d: Open withdrawn", llp.ErrClosed, s.sid))
			return errSessionOver
		}
		s.a.established()
		if res != nil {
			res <- nil
		}
		return nil
	case sessionsm.ActRejected, sessionsm.ActNonULPRejected, sessionsm.ActWithdrawn:
		s.mu.Lock()
		s.rxFinal = true
		s.mu.Unlock()
		var err error
		switch act {
		case sessionsm.ActRejected:
			err = &RejectError{StreamID: s.sid, Enhanced: ddpchunk.Enhanced(ctrl.Function), IRDORD: ctrl.IRDORD,
				PrivateData: append([]byte(nil), ctrl.PrivateData...)}
		case sessionsm.ActNonULPRejected:
			err = fmt.Errorf("%w: stream %d (RFC 5043 §6.4)", ErrSessionTerminated, s.sid)
		default:
			err = fmt.Errorf("%w: stream %d: initiator withdrew", errIncomingDone, s.sid)
		}
		// The active side's only chunk was its Initiate; the passive
		// side that saw a withdrawal sent nothing: either way this side
		// has nothing more to send.
		s.sendClosed.Store(true)
		s.markSentFinal()
		s.finish(err)
		return errSessionOver
	case sessionsm.ActPeerTerminate:
		s.mu.Lock()
		s.rxFinal = true
		s.mu.Unlock()
		s.requestTerminate()
		s.finish(nil)
		return errSessionOver
	case sessionsm.ActPeerFinal:
		s.mu.Lock()
		s.rxFinal = true
		s.mu.Unlock()
		s.finish(nil)
		return errSessionOver
	}
	return nil // sessionsm.ActDrop
}

// queueEntryCost is a queued segment's slot in Session.queue.
const queueEntryCost = 8

// errSessionOver stops the reorderer after the session's last chunk.
var errSessionOver = errors.New("sctpllp: session over")

func (s *session) deliverSegment(seg []byte) error {
	s.segsRcvd.Add(1)
	s.bytesRcvd.Add(uint64(len(seg)))
	if s.rxBroken {
		return nil // RFC 5041 §7.1: silently drop after a DDP error
	}
	if !s.started {
		// Before Start (or before the passive ULP decided): keep a copy,
		// bounded together with the re-sequencing buffer and charged as
		// held (the buffer and its slot in queue).
		_, held := s.ro.Pending()
		cost := reseq.BufCost(len(seg)) + queueEntryCost
		if held+int(s.queued)+cost > min(s.a.cfg.MaxHeldBytes, math.MaxInt32) {
			return &protocolError{StreamID: s.sid, Reason: "segments before Start exceed the held-octet bound (Config.MaxHeldBytes)", Err: errHeldLimit}
		}
		if err := s.a.held.Charge(cost); err != nil {
			return err
		}
		bp := bufpool.Get(len(seg))
		copy(*bp, seg)
		s.queue = append(s.queue, bp)
		s.queued += int32(cost)
		return nil
	}
	if err := s.h.HandleSegment(seg); err != nil {
		s.rxBroken = true
	}
	return nil
}

// Incoming is a received DDP Stream Session Initiate waiting for the
// ULP's decision (RFC 5043 §6.2–§6.4).
type Incoming struct {
	s       *session
	decided atomic.Bool
	// StreamID is the SCTP stream identifier.
	StreamID uint16
	// Enhanced is true for an Enhanced Initiate (RFC 6581 §7).
	Enhanced bool
	// IRDORD is the initiator's IRD/ORD word (enhanced only).
	IRDORD iwarp.IRDORD
	// PrivateData is the initiator's private data (after the word).
	PrivateData []byte
}

// AcceptParams are the passive side's reply to an Initiate.
type AcceptParams struct {
	// PrivateData is the ULP private data of the Accept; with the IRD/ORD
	// word of an enhanced session it may not exceed 512 octets.
	PrivateData []byte
	// IRD and ORD are the responder's values (RFC 6581 §9.1), used for an
	// enhanced session only; 0..0x3FFF.
	IRD, ORD int
	// PeerToPeer is flag A, RTR flags B–D of the responder's word
	// (RFC 6581 §9.2). The responder echoes the initiator's A whatever
	// PeerToPeer says, and PeerToPeer set against an initiator's A of 0 is
	// an error (errConnectionModel): "The responder MUST set Control Flag A
	// to 0 if Control Flag A is 0 in the request". B–D are sent only in the
	// peer-to-peer model.
	PeerToPeer bool
	RTR        iwarp.RTR
}

// errConnectionModel reports an Accept or Reject of an Enhanced Initiate
// that asks for the peer-to-peer model when the initiator asked for the
// client-server one: the responder echoes flag A (RFC 6581 §9.2).
var errConnectionModel = errors.New("sctpllp: the responder must echo the initiator's connection model")

func (p AcceptParams) word(in *Incoming) (iwarp.IRDORD, error) {
	if p.IRD < 0 || p.IRD > iwarp.NoNegotiation || p.ORD < 0 || p.ORD > iwarp.NoNegotiation {
		return iwarp.IRDORD{}, fmt.Errorf("%w: IRD %d ORD %d", iwarp.ErrInvalidIRDORD, p.IRD, p.ORD)
	}
	if p.PeerToPeer && !in.IRDORD.PeerToPeer {
		return iwarp.IRDORD{}, fmt.Errorf("%w: peer-to-peer reply to a client-server request (RFC 6581 §9.2)", errConnectionModel)
	}
	return iwarpwire.WireIRDORD(iwarp.IRDORD{
		PeerToPeer: in.IRDORD.PeerToPeer, // RFC 6581 §9.2: the responder echoes A
		RTR:        p.RTR,
		IRD:        uint16(p.IRD), ORD: uint16(p.ORD),
	}), nil
}

func (in *Incoming) decide(c ddpchunk.Control, accept bool) (*session, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !in.decided.CompareAndSwap(false, true) {
		return nil, errIncomingDone
	}
	s := in.s
	s.mu.Lock()
	if s.st() != sessionsm.InitReceived {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: stream %d", errIncomingDone, s.sid)
	}
	s.incoming = nil
	if accept {
		s.setState(sessionsm.Established)
		s.handed = true
		s.params.LocalIRDORD = c.IRDORD
	} else {
		s.setState(sessionsm.Done)
	}
	s.mu.Unlock()
	s.a.incomingDone()
	if accept {
		s.a.established()
	}
	s.txMu.Lock()
	err := s.sendControlLocked(c)
	s.txMu.Unlock()
	if err != nil {
		s.sendClosed.Store(true)
		s.finish(fmt.Errorf("%w: sending %v: %w", llp.ErrClosed, c.Function, err))
		return nil, fmt.Errorf("sctpllp: stream %d: %w", s.sid, err)
	}
	if !accept {
		// RFC 5043 §6.3: the Reject is the passive side's final chunk.
		s.sendClosed.Store(true)
		s.markSentFinal()
		s.finish(fmt.Errorf("%w: rejected locally", llp.ErrClosed))
		return nil, nil
	}
	return s, nil
}

// Accept sends the (Enhanced) Accept and returns the established session.
// Segments the initiator sent after its Initiate are delivered after
// Start.
func (in *Incoming) Accept(p AcceptParams) (Session, error) {
	c := ddpchunk.Control{Function: funcAccept, PrivateData: p.PrivateData}
	if in.Enhanced {
		w, err := p.word(in)
		if err != nil {
			return nil, err
		}
		c.Function, c.IRDORD = funcEnhancedAccept, w
	}
	sess, err := in.decide(c, true)
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// Reject sends a Reject (or, for an Enhanced Initiate, an Enhanced Reject
// with IRD and ORD 0x3FFF: no negotiation) carrying privateData
// (RFC 5043 §6.3). The stream is then quarantined until the peer's side
// is over.
func (in *Incoming) Reject(privateData []byte) error {
	return in.RejectWith(AcceptParams{PrivateData: privateData, IRD: iwarp.NoNegotiation, ORD: iwarp.NoNegotiation})
}

// RejectWith rejects with explicit IRD/ORD values for an Enhanced Reject,
// for example the ORD the responder requires (RFC 6581 §9.1).
func (in *Incoming) RejectWith(p AcceptParams) error {
	c := ddpchunk.Control{Function: funcReject, PrivateData: p.PrivateData}
	if in.Enhanced {
		w, err := p.word(in)
		if err != nil {
			return err
		}
		c.Function, c.IRDORD = funcEnhancedReject, w
	}
	_, err := in.decide(c, false)
	return err
}

// eventOf is the state machine event of a session control message.
func eventOf(f functionCode) sessionsm.Event {
	switch ddpchunk.Base(f) {
	case funcInitiate:
		return sessionsm.EvInitiate
	case funcAccept:
		return sessionsm.EvAccept
	case funcReject:
		return sessionsm.EvReject
	}
	return sessionsm.EvTerminate
}
