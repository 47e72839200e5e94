package rdmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/ring"

	"github.com/sctp-rdma/sctp-rdma/ddp"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/rdmaphook"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// Defaults of EndpointConfig.
const (
	defaultSQDepth = 256
	defaultRQDepth = 256
)

// helperWRID is the WRID of the receive recvWait posts, whose completion
// goes to the CQ if the wait's context ended first.
const helperWRID = math.MaxUint64

// EndpointConfig configures an Endpoint.
type EndpointConfig struct {
	// IRD is the maximum number of inbound RDMA Read and Atomic Requests
	// outstanding at this Data Source (RFC 5040 §6.1, RFC 7306 §5.2); the
	// peer exceeding it is answered with a Terminate. ORD is the maximum
	// number of outbound Read and Atomic Requests; requests beyond it wait
	// in the send queue. Both are negotiated by the LLP set-up (MPA
	// enhanced, RFC 6581; RFC 5043 session control) and passed in. 0 means
	// iwarp.DefaultIRD/DefaultORD (128); a negative value means none.
	IRD, ORD int
	// SQDepth and RQDepth bound the send work requests not yet completed
	// and the receive work requests posted (0: 256).
	SQDepth, RQDepth int
	// SendCQ and RecvCQ receive the completions of send and receive work
	// requests; they may be the same CQ. nil: a private CQ of the queue's
	// depth (Endpoint.Config reports it).
	SendCQ, RecvCQ *CQ
	// SendRTR, on the Initiator of a peer-to-peer connection (RFC 6581
	// §9.2), is the one negotiated RTR option the endpoint sends as its
	// first message, before any posted work request (see RTR). 0: none.
	SendRTR iwarp.RTR
	// ExpectRTR, on the Responder of a peer-to-peer connection, is the set
	// of RTR options it advertised: the first message received must be one
	// of them, and is consumed without a completion; anything else is
	// answered with a Terminate iwarp.Term.NoMatchingRTR. 0: none.
	ExpectRTR iwarp.RTR
}

type epState uint8

const (
	stateIdle    epState = iota // created, not started
	stateRunning                // started
	stateClosing                // Close is draining
	stateDown                   // terminated, failed or closed: everything flushed
)

// sendReq is a send queue work request in flight.
type sendReq struct {
	wr       SendWR
	sinkSTag uint32
	sinkTO   uint64
	reqID    uint32 // atomics
	issued   bool   // taken for issue (transmit loop or inline poster): can no longer be withdrawn
	canceled bool
	done     bool
	comp     Completion
	waiter   chan Completion
	// helper marks a request of Do (or recvWait),
	// which the helper still reads after its completion: it is never
	// recycled.
	helper bool
	// releaseAfterIssue: the request completed (a fast Read Response)
	// while its issuer still held it; issuedLocked recycles it.
	releaseAfterIssue bool
	// inLLP: issued with hold, its body may still be read by the LLP
	// (llp.Batcher: until the SendSegment or Flush that sends it
	// returns); releaseHeld: it completed meanwhile, and unholdLocked
	// recycles it.
	inLLP, releaseHeld bool
	nextHeld           *sendReq
	// body holds a Read or Atomic Request's message: the LLP may keep it
	// past the issue, until the requests posted with it leave together
	// (txLoop, ddp.Sender.SendUntaggedMore).
	body [atomicRequestLen]byte
}

// recvReq is a posted receive work request.
type recvReq struct {
	wr     recvWR
	seq    uint64 // the DDP cookie
	waiter chan Completion
	helper bool // as sendReq.helper
}

// inbound is a validated Read or Atomic Request waiting for the responder.
type inbound struct {
	atomic bool
	rr     readRequest
	ar     atomicRequest
	ddpHdr [iwarpwire.DDPUntaggedHeaderLen]byte
	segLen int
}

// Endpoint is one RDMAP Stream (RFC 5040 §1.3): the "QP" of the verbs
// model, running over one llp.Stream. It implements ddp.ULP.
//
// Its goroutines (receive, transmit, responder, terminator) end with it:
// Done is closed when all have ended.
type Endpoint struct {
	// Goroutines: the LLP's delivery goroutine runs the receive path (ddp
	// Receiver and the ddp.ULP methods, which never block on the
	// network); a transmit goroutine processes the send queue in order
	// (RFC 5040 §5.5 rule 13); a responder goroutine answers inbound Read
	// and Atomic Requests in order (§5.5 rule 20, RFC 7306 §5.2.2 rule 8),
	// so that a send queue waiting for ORD never holds up responses the
	// peer is waiting for. One mutex serialises the ddp.Sender among them.
	// A terminator goroutine sends the single Terminate and tears the LLP
	// stream down.
	pd      *PD
	dev     *Device
	s       llp.Stream
	ird     int32 // 32 bits (and the flags grouped below): thousands of
	ord     int32 // streams have an endpoint each
	sqDepth int32 // 32 bits like ird and ord
	rqDepth int32
	sendCQ  *CQ
	recvCQ  *CQ
	rtrSend iwarp.RTR // RTR to send first (transmit loop only)
	rtrWait iwarp.RTR // RTR still awaited (receive path only)
	// rxEmit: the receive path is emitting (rxEmitBegin); rxDeferred:
	// the CQs whose handler it will run (dispatchHandlers). Written
	// under mu by the receiving goroutine only.
	rxEmit     bool
	rxDeferred uint8
	// txEmit and txDeferred are the same for the transmit loop, which
	// runs the handlers of the completions it makes between two issues
	// (issueAllLocked). Guarded by mu.
	txEmit     bool
	txDeferred uint8

	recv *ddp.Receiver

	// rxMu is held while a received tagged segment is validated and
	// placed (PD.fence); untagged segments, placed into posted buffers
	// that no STag names, go without it.
	rxMu sync.Mutex

	sendMu   sync.Mutex
	sender   *ddp.Sender // guarded by sendMu
	txClosed bool        // guarded by sendMu: no message may follow
	// txHeld: a request went to DDP with SendUntaggedMore and the LLP may
	// still hold it; the transmit loop flushes before it stops. Guarded
	// by sendMu.
	txHeld bool
	// scratch holds the messages RDMAP sends from the endpoint: the RTR's
	// zero-length Read Request, Immediate Data, Atomic Responses (Read
	// and Atomic Requests have their own, sendReq.body). Guarded by
	// sendMu.
	scratch [readRequestLen]byte // checked below: the largest of the three

	down atomic.Bool // state == stateDown, readable without mu

	mu    sync.Mutex
	state epState
	err   error
	sq    ring.Ring[*sendReq] // posted, not yet taken by the transmit loop
	order ring.Ring[*sendReq] // every send WR not yet emitted, in submission order
	orq   ring.Ring[*sendReq] // Reads and Atomics awaiting their response
	rq    ring.Ring[*recvReq] // posted receives in MSN order
	irq   ring.Ring[inbound]  // inbound requests waiting for the responder
	// freeSend and freeRecv hold requests whose completion was emitted,
	// for the next posts: the data path allocates no request in steady
	// state (at most SQ and RQ depth of them are kept).
	freeSend []*sendReq
	freeRecv []*recvReq
	// issuingReq is the request between takeLocked and issuedLocked (nil
	// while issueQuickLocked issues a caller's request: quick).
	issuingReq *sendReq
	// held lists the requests issued with hold whose bodies the LLP may
	// still read (sendReq.inLLP), linked through sendReq.nextHeld (a
	// pointer, not a slice: 16 octets less in every endpoint); guarded
	// by mu.
	held     *sendReq
	respBusy bool
	// draining: postSends issues the requests it posted, as the transmit
	// loop would, which does not start meanwhile. Guarded by mu.
	draining bool
	// quick: issueQuickLocked is issuing a caller's request, which is in
	// neither queue and has no sendReq; it counts against the send
	// queue's depth.
	// Guarded by mu.
	quick bool
	// txRunning: the transmit goroutine (txLoop) runs; it starts with the
	// endpoint (for the RTR), ends when nothing in the send queue may be
	// issued, and starts again when something may (kickTxLocked).
	// Guarded by mu.
	txRunning bool
	// respMore: the Last segment of the Read Response being sent may be
	// held by the LLP, another response following at once; respCorked:
	// one was, and nothing has sent it since. Guarded by sendMu (here, in
	// what would be padding).
	respMore, respCorked bool
	// afterDone are the whenDone functions still to run; finished is
	// set once Done is closed. Guarded by mu.
	afterDone []func()
	// txLoopFn and respLoopFn are the loops as func values made once:
	// "go e.txLoop()" would allocate a closure for each start.
	txLoopFn, respLoopFn func()
	// respRunning: the responder goroutine (respLoop) runs; it starts
	// when an inbound Read or Atomic Request is queued and ends when the
	// queue is empty, so an idle stream keeps no goroutine for it.
	// Guarded by mu.
	respRunning bool
	// issuing: a goroutine (the transmit loop, or a poster issuing inline)
	// is handing a send-queue request to DDP; txReady: the transmit loop
	// Has sent the RTR, so requests may be issued. Guarded by mu.
	issuing, txReady bool
	// respHeld: the request being answered still counts against IRD
	// (RFC 5040 §6.1) until its response's last segment is handed to the
	// LLP; guarded by mu.
	respHeld bool
	// respLast: the message being sent is a Read or Atomic Response whose
	// Last segment frees the IRD slot; guarded by sendMu.
	respLast   bool
	finished   bool // Done closed (whenDone); guarded by mu
	cqOverflow bool
	termSent   bool // this endpoint put a Terminate on the wire
	nextReqID  uint32
	// parts counts the running parts of a started endpoint (partDone);
	// beside nextReqID, in what would be padding.
	parts     atomic.Int32
	recvSeq   uint64
	closeWait chan struct{} // closed and replaced on progress while Close waits
	termErr   error         // the LLP's error sending the Terminate
	// ctr holds the counters, made by the first message sent or received
	// (an idle stream's endpoint is 280 octets smaller without them).
	ctr atomic.Pointer[epCounters]

	// done is Done's channel, made by its first call; guarded by mu.
	done chan struct{}
}

var _ ddp.ULP = (*ddpULP)(nil)

func init() {
	rdmaphook.AfterDone = func(ep any, f func()) { ep.(*Endpoint).whenDone(f) }
}

// Endpoint.scratch holds a Read Request, Immediate Data or an Atomic
// Response: a negative constant here would not compile.
const _ = uint(readRequestLen-immediateLen) + uint(readRequestLen-atomicResponseLen)

// NewEndpoint creates an RDMAP Stream of this PD on the established LLP
// stream s (RFC 5040 §6.1: s is already in RDMA mode). The endpoint owns s
// from now on. Post receives, then call Start.
func (pd *PD) NewEndpoint(s llp.Stream, cfg EndpointConfig) (*Endpoint, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil llp.Stream", ErrInvalidWR)
	}
	norm := func(v, def int) int {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	e := &Endpoint{
		pd:      pd,
		dev:     pd.dev,
		s:       s,
		ird:     int32(min(norm(cfg.IRD, iwarp.DefaultIRD), math.MaxInt32)),
		ord:     int32(min(norm(cfg.ORD, iwarp.DefaultORD), math.MaxInt32)),
		sqDepth: int32(min(norm(cfg.SQDepth, defaultSQDepth), math.MaxInt32)),
		rqDepth: int32(min(norm(cfg.RQDepth, defaultRQDepth), math.MaxInt32)),
		sendCQ:  cfg.SendCQ,
		recvCQ:  cfg.RecvCQ,
	}
	e.sender = ddp.NewSender((*respStream)(e))
	e.txLoopFn, e.respLoopFn = e.txLoop, e.respLoop
	if e.sqDepth == 0 || e.rqDepth == 0 {
		return nil, fmt.Errorf("%w: queue depths must be positive", ErrInvalidWR)
	}
	if err := checkRTRConfig(&cfg); err != nil {
		return nil, err
	}
	if e.sendCQ == nil {
		e.sendCQ = NewCQ(int(e.sqDepth))
	}
	if e.recvCQ == nil {
		e.recvCQ = NewCQ(int(e.rqDepth))
	}
	// One lock for the endpoint and its DDP queues: the receive path of a
	// message takes mu once (ddp.NewReceiverGuarded), and so does PostRecv.
	e.recv = ddp.NewReceiverGuarded((*ddpULP)(e), numQueues, &e.mu)
	if err := e.initRTR(&cfg); err != nil {
		return nil, err
	}
	pd.addEndpoint(e)
	return e, nil
}

// Config returns the configuration in effect (ibv_query_qp): IRD and ORD
// as negotiated (-1: none), the queue depths, and the CQs, private ones
// too. The RTR fields are not reported.
func (e *Endpoint) Config() EndpointConfig {
	limit := func(v int32) int {
		if v == 0 {
			return -1
		}
		return int(v)
	}
	return EndpointConfig{IRD: limit(e.ird), ORD: limit(e.ord),
		SQDepth: int(e.sqDepth), RQDepth: int(e.rqDepth), SendCQ: e.sendCQ, RecvCQ: e.recvCQ}
}

// PD returns the endpoint's protection domain.
func (e *Endpoint) PD() *PD { return e.pd }

// LLPInfo describes the LLP stream under the endpoint: its kind, stream
// identifier, addresses and segment counters (llp.Info).
func (e *Endpoint) LLPInfo() llp.Info { return e.s.Info() }

// Err returns why the endpoint stopped (a *TerminateError for an RDMAP
// Abortive Termination either way, the LLP's error, ErrPeerClosed or
// ErrClosed), or nil while it runs.
func (e *Endpoint) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Done is closed when the endpoint has stopped and all its goroutines and
// the LLP's delivery have ended.
func (e *Endpoint) Done() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done == nil {
		// Made on first use: an idle endpoint watched with whenDone
		// holds no channel.
		e.done = make(chan struct{})
		if e.finished {
			close(e.done)
		}
	}
	return e.done
}

// finishDoneLocked marks the endpoint finished, closes Done if it was
// made, and returns the whenDone functions to run. mu is held.
func (e *Endpoint) finishDoneLocked() []func() {
	fs := e.afterDone
	e.afterDone, e.finished = nil, true
	if e.done != nil {
		close(e.done)
	}
	return fs
}

// Internal untagged buffers: QN 1 holds IRD+1 buffers sized for the larger
// of the Read Request and Atomic Request headers, so that a peer exceeding
// IRD is seen by RDMAP (Terminate "catastrophic error, localized to RDMAP
// Stream", as Linux siw sends) rather than by DDP as "no buffer"; QN 2
// holds one Terminate buffer; QN 3 holds ORD+1 Atomic Response buffers.
const termBufLen = 128

// internalQueues returns the number and size of the internal untagged
// buffers by QN (QN 0, the ULP's, has none).
func internalQueues(ird, ord int) [numQueues]struct{ n, size int } {
	return [numQueues]struct{ n, size int }{
		iwarpwire.RDMAPQNReadRequest:    {ird + 1, atomicRequestLen},
		iwarpwire.RDMAPQNTerminate:      {1, termBufLen},
		iwarpwire.RDMAPQNAtomicResponse: {ord + 1, atomicResponseLen},
	}
}

// Start posts the internal untagged buffers, starts the endpoint's
// goroutines and the LLP's delivery (llp.Stream.Start).
func (e *Endpoint) Start() error {
	e.mu.Lock()
	if e.state != stateIdle {
		e.mu.Unlock()
		return fmt.Errorf("rdmap: Start: endpoint already started or closed: %w", ErrClosed)
	}
	// The internal queues are DDP credit queues: no memory until a
	// message arrives, one buffer per queue afterwards (ddp.PostCredits).
	for qn, sz := range internalQueues(int(e.ird), int(e.ord)) {
		if sz.n == 0 {
			continue
		}
		if err := e.recv.PostCredits(uint32(qn), sz.n, sz.size); err != nil {
			e.mu.Unlock()
			return fmt.Errorf("rdmap: Start: %w", err)
		}
	}
	e.state = stateRunning
	// The receive side and the transmit loop, and the responder loop
	// while it runs (kickResponderLocked); the last part to end finishes
	// the endpoint (partDone), so no goroutine waits for the others.
	e.parts.Store(2)
	e.txRunning = true
	go e.txLoopFn()
	e.mu.Unlock()
	e.s.Start(rxHandler{e})
	return nil
}

// rxHandler wraps the ddp.Receiver as the llp.Handler, holding rxMu while
// a tagged segment is processed (see PD.fence).
type rxHandler struct{ e *Endpoint }

// HandleSegment implements llp.Handler.
func (h rxHandler) HandleSegment(seg []byte) error {
	e := h.e
	// Only a tagged segment places by STag (RFC 5041 §4.2), which is what
	// PD.fence waits for: an untagged one (RFC 5041 §4.3) goes to a posted
	// buffer and saves the lock pair on every Send and request.
	tagged := len(seg) > 0 && iwarpwire.DDPControl(seg[0]).Tagged()
	if tagged {
		e.rxMu.Lock()
	}
	err := e.recv.HandleSegment(seg)
	// rxDeferred is written under mu by this goroutine only (rxEmit):
	// read here, by the same goroutine, it needs no lock.
	deferred := e.rxDeferred
	e.rxDeferred = 0
	if tagged {
		e.rxMu.Unlock()
	}
	if deferred != 0 {
		e.dispatchHandlers(deferred)
	}
	return err
}

// rxEmit marks the receive path's own critical sections: completions it
// emits to a CQ with a handler are handed to the handler by the
// receiving goroutine once out of the endpoint's locks (CQ.SetHandler),
// not by a goroutine started for them. Both run under mu, on the
// receiving goroutine.
func (e *Endpoint) rxEmitBegin() { e.rxEmit = true }
func (e *Endpoint) rxEmitEnd()   { e.rxEmit = false }

// dispatchHandlers runs the handlers of the CQs whose next call the
// receive path or the transmit loop reserved (bit 0: the send CQ, bit 1: the receive CQ; a CQ
// that is both is reserved once, as the send CQ), on the receiving
// or transmitting goroutine, holding no lock.
func (e *Endpoint) dispatchHandlers(deferred uint8) {
	if deferred&1 != 0 {
		e.sendCQ.runClaimed()
	}
	if deferred&2 != 0 {
		e.recvCQ.runClaimed()
	}
}

// HandleClosed implements llp.Handler.
func (h rxHandler) HandleClosed(err error) { h.e.recv.HandleClosed(err) }

func (e *Endpoint) signal(ch chan struct{}) { signal(ch) }

// progressLocked wakes a waiting Close.
func (e *Endpoint) progressLocked() {
	if e.closeWait != nil {
		close(e.closeWait)
		e.closeWait = nil
	}
}

func isORD(op WorkType) bool { return op == WRRead || op == WRFetchAdd || op == WRCmpSwap }

// PostSend queues send work requests in order (ibv_post_send; RFC 5040
// §5.5 rule 13: each is processed after every earlier one); completions
// go to the send CQ in submission order (rule 15). Requests posted
// together may leave together: Reads and Atomics as one SCTP packet or one
// MPA writev. It returns how many were posted: on an error, those before
// the failing one. It may be called from any goroutine, before or after
// Start.
func (e *Endpoint) PostSend(wrs ...SendWR) (int, error) {
	if len(wrs) == 1 {
		if _, err := e.postSend(&wrs[0], nil); err != nil {
			return 0, err
		}
		return 1, nil
	}
	return e.postSends(wrs)
}

// postSend posts *wr (not kept: copied into its request unless issued
// before the return).
func (e *Endpoint) postSend(wr *SendWR, waiter chan Completion) (*sendReq, error) {
	if err := wr.validate(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if waiter == nil && e.quickLocked(wr) {
		// Issued before PostSend returns: an Inline request's buffer is
		// free again without a copy.
		e.issueQuickLocked(wr)
		return nil, nil
	}
	r := e.newSendReqLocked() // zeroed: only the fields set here are written
	r.wr, r.waiter, r.helper = *wr, waiter, waiter != nil
	if wr.Inline {
		r.wr.Local = bytes.Clone(wr.Local) // the caller may reuse its buffer now (at most maxInline octets)
	}
	if err := e.admitSendLocked(r); err != nil {
		e.releaseSendLocked(r)
		e.mu.Unlock()
		return nil, err
	}
	e.sq.Push(r)
	e.order.Push(r)
	// A small request posted to an idle send queue goes to DDP from this
	// goroutine: no hand-off to the transmit loop, whose wake-up costs more
	// than the issue itself for a short message. takeLocked keeps the
	// one-writer rule; a larger or queued request is left to the loop.
	if e.sq.Len() == 1 && len(wr.Local) <= inlineIssueMax && e.state == stateRunning {
		if t := e.takeLocked(); t != nil {
			e.mu.Unlock()
			err := e.issue(t)
			e.mu.Lock()
			e.issuedLocked(t, err)
			e.mu.Unlock()
			return r, nil
		}
	}
	e.kickTxLocked()
	e.mu.Unlock()
	return r, nil
}

// postSends posts several requests for PostSend: small ones posted to an
// idle send queue are issued from this goroutine, the rest by the
// transmit loop.
func (e *Endpoint) postSends(wrs []SendWR) (int, error) {
	for i := range wrs {
		if err := wrs[i].validate(); err != nil {
			return 0, fmt.Errorf("work request %d: %w", i, err)
		}
	}
	e.mu.Lock()
	if len(wrs) == 1 && e.quickLocked(&wrs[0]) {
		// Issued before PostSend returns: an Inline request's buffer is
		// free again without a copy, and the caller's slice is not kept.
		e.issueQuickLocked(&wrs[0])
		return 1, nil
	}
	idle := e.sq.Len() == 0
	small := true
	for i, wr := range wrs {
		if wr.Inline {
			wr.Local = bytes.Clone(wr.Local)
		}
		r := e.newSendReqLocked()
		r.wr = wr
		if err := e.admitSendLocked(r); err != nil {
			e.releaseSendLocked(r)
			if i > 0 {
				e.kickTxLocked()
			}
			e.mu.Unlock()
			return i, err
		}
		e.sq.Push(r)
		e.order.Push(r)
		small = small && len(wr.Local) <= inlineIssueMax
	}
	if !idle || !small || e.state != stateRunning || e.issuing || e.txRunning {
		e.kickTxLocked()
		e.mu.Unlock()
		return len(wrs), nil
	}
	// Issued here, as the transmit loop would; kickTxLocked waits
	// (draining) so that the loop does not start for the rest meanwhile.
	e.draining = true
	held := e.issueAllLocked(false)
	e.draining = false
	e.kickTxLocked() // for requests still waiting (an ORD slot)
	e.mu.Unlock()
	if held {
		e.flushHeld()
	}
	return len(wrs), nil
}

// quickLocked reports whether wr may be issued by issueQuickLocked: an
// unsignaled Send, Write or Immediate of at most inlineIssueMax octets
// Posted to a running endpoint with nothing posted before it outstanding
// (the send queue and the submission order empty) and nobody issuing.
// Such a request passes admitSendLocked's checks by construction, and the
// RFC 5040 §5.5 rules hold without the queues: it is the only request in
// flight (rule 13), and its completion, never reported on success, can
// only be a flush that precedes every later one (rule 15). mu is held.
func (e *Endpoint) quickLocked(wr *SendWR) bool {
	switch wr.Op {
	case WRSend, WRWrite, WRWriteImm, WRImmediate:
	default:
		return false
	}
	return wr.Unsignaled && len(wr.Local) <= inlineIssueMax &&
		e.state == stateRunning && e.txReady && !e.issuing && !e.draining &&
		e.sq.Len() == 0 && e.order.Len() == 0 && e.sqDepth > 0
}

// issueQuickLocked issues wr (quickLocked said it may) from the posting
// goroutine without queueing it: the latency path of a ping-pong, where
// the queues' bookkeeping (a request taken from the free list, pushed on
// and popped from two rings, its completion recorded and the request
// zeroed again) was a tenth of the layers' CPU per round trip. issuing
// keeps the one-writer rule meanwhile: the transmit loop and other posters
// queue behind it, and Close waits for it. A failure takes the endpoint
// down and completes wr as flushed (RFC 5040 §5.4): the post itself
// succeeded. mu is held on entry and released on return.
func (e *Endpoint) issueQuickLocked(wr *SendWR) {
	e.issuing, e.quick = true, true
	e.mu.Unlock()
	// The caller's request, unchanged until the post returns, is issued
	// in place: no request taken from the free list, no copy of it.
	err := e.issueWR(wr, nil, false)
	e.mu.Lock()
	e.issuing, e.quick = false, false
	if err != nil {
		if !errors.Is(err, errTxClosed) {
			e.failLocked(txFailure(err))
		}
		e.emitLocked(e.sendCQ, nil, &Completion{WRID: wr.ID, Op: wr.Op, Err: fmt.Errorf("%w: %w", ErrFlushed, err)})
		e.checkOverflowLocked()
	}
	if e.sq.Len() > 0 {
		e.kickTxLocked()
	}
	e.progressLocked() // a Close waiting for the issue
	e.mu.Unlock()
}

// closedErrLocked is the error of a post to an endpoint that is closing
// or down: ErrClosed, and the cause when the endpoint went down on an
// error (a Terminate sent or received, an LLP failure), so that the next
// post names it (errors.Is/As against *TerminateError, the LLP's errors).
// mu is held.
func (e *Endpoint) closedErrLocked(op string) error {
	if e.err != nil {
		return fmt.Errorf("rdmap: %s: %w: %w", op, ErrClosed, e.err)
	}
	return fmt.Errorf("rdmap: %s: %w", op, ErrClosed)
}

// admitSendLocked checks a send request against the endpoint's state and
// queues; mu is held.
func (e *Endpoint) admitSendLocked(r *sendReq) error {
	wr := &r.wr
	switch e.state {
	case stateClosing, stateDown:
		return e.closedErrLocked("post send")
	}
	if isORD(wr.Op) && e.ord == 0 {
		return fmt.Errorf("%w: %v with ORD 0", ErrInvalidWR, wr.Op)
	}
	if n := e.order.Len() + b2i(e.quick); n >= int(e.sqDepth) {
		return fmt.Errorf("rdmap: post send: %d outstanding: %w", n, ErrResourceLimit)
	}
	if wr.Op == WRRead && wr.Sink != nil {
		if _, err := wr.Sink.local(e, wr.SinkOffset, uint64(wr.Length), LocalWrite); err != nil {
			return err
		}
		wr.Sink.pd.dev.mu.RLock()
		r.sinkSTag = wr.Sink.index<<8 | uint32(wr.Sink.key)
		r.sinkTO = wr.Sink.baseTO + wr.SinkOffset
		wr.Sink.pd.dev.mu.RUnlock()
	}
	return nil
}

// PostRecv posts buf on queue 0 (ibv_post_recv, RFC 5040 §5.3): one Send
// or Immediate Data message fills it (a longer message is a DDP error,
// RFC 5041 §7.2). Its completion, with WRID id, goes to the receive CQ in
// the order messages arrive. It may be called from any goroutine, before
// or after Start.
func (e *Endpoint) PostRecv(id uint64, buf []byte) error {
	_, err := e.postRecv(recvWR{ID: id, Buf: buf}, nil)
	return err
}

func (e *Endpoint) postRecv(wr recvWR, waiter chan Completion) (*recvReq, error) {
	e.mu.Lock()
	if err := e.admitRecvLocked(); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	r := e.newRecvReqLocked() // zeroed, as newSendReqLocked's
	r.wr, r.seq, r.waiter, r.helper = wr, e.recvSeq, waiter, waiter != nil
	if _, err := e.recv.PostUntagged(iwarpwire.RDMAPQNSend, wr.Buf, r.seq); err != nil {
		e.releaseRecvLocked(r)
		e.mu.Unlock()
		return nil, fmt.Errorf("rdmap: post recv: %w: %w", ErrClosed, err)
	}
	e.recvSeq++
	e.rq.Push(r)
	e.mu.Unlock()
	return r, nil
}

// admitRecvLocked refuses a receive posted to a closing or ended endpoint
// or beyond the receive queue's depth. mu is held.
func (e *Endpoint) admitRecvLocked() error {
	switch e.state {
	case stateClosing, stateDown:
		return e.closedErrLocked("post recv")
	}
	if e.rq.Len() >= int(e.rqDepth) {
		return fmt.Errorf("rdmap: post recv: %d posted: %w", e.rq.Len(), ErrResourceLimit)
	}
	return nil
}

// finishLocked records the completion of r and emits every completion that
// is now at the head of the submission order (RFC 5040 §5.5 rule 15).
func (e *Endpoint) finishLocked(r *sendReq, c Completion) {
	if r.done {
		return
	}
	r.done = true
	c.WRID, c.Op = r.wr.ID, r.wr.Op
	r.comp = c
	n := 0
	for e.order.Len() > 0 && e.order.Front().done {
		h := e.order.Pop()
		if h.waiter != nil || !h.wr.Unsignaled || h.comp.Err != nil {
			e.emitLocked(e.sendCQ, h.waiter, &h.comp)
		}
		e.releaseSendLocked(h)
		n++
	}
	if n > 0 {
		e.progressLocked()
	}
}

// partDone ends one part of a started endpoint: the receive side, the
// transmit loop, the responder loop or the terminator. The last one leaves
// the protection domain and closes Done.
func (e *Endpoint) partDone() {
	if e.parts.Add(-1) == 0 {
		e.pd.removeEndpoint(e)
		e.mu.Lock()
		fs := e.finishDoneLocked()
		e.mu.Unlock()
		for _, f := range fs {
			go f()
		}
	}
}

// whenDone arranges for f to run in a goroutine of its own once the
// endpoint has finished (Done is closed), at once if it has: a watcher of
// many endpoints (package transport, package streams) uses it instead of
// a goroutine blocked on each Done, through internal/rdmapconf.
func (e *Endpoint) whenDone(f func()) {
	e.mu.Lock()
	if !e.finished {
		e.afterDone = append(e.afterDone, f)
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	go f()
}

// newSendReqLocked returns a recycled request or a new one, zeroed either
// way (releaseSendLocked zeroes what it keeps). mu is held.
func (e *Endpoint) newSendReqLocked() *sendReq {
	if n := len(e.freeSend); n > 0 {
		r := e.freeSend[n-1]
		e.freeSend = e.freeSend[:n-1]
		return r
	}
	return new(sendReq)
}

// releaseSendLocked keeps r, whose completion was emitted (or which was
// never queued), for a later post. A helper's request, one of an endpoint
// that failed (its queues may still name it) and those beyond the send
// queue's depth are left to the garbage collector. mu is held.
func (e *Endpoint) releaseSendLocked(r *sendReq) {
	if r.helper || e.state != stateRunning && e.state != stateIdle || len(e.freeSend) >= int(e.sqDepth) {
		return
	}
	if r == e.issuingReq {
		r.releaseAfterIssue = true // its issuer reads it once more
		return
	}
	if r.inLLP {
		r.releaseHeld = true // the LLP may still read its body
		return
	}
	*r = sendReq{}
	e.freeSend = append(e.freeSend, r)
}

// newRecvReqLocked and releaseRecvLocked do the same for receives.
func (e *Endpoint) newRecvReqLocked() *recvReq {
	if n := len(e.freeRecv); n > 0 {
		r := e.freeRecv[n-1]
		e.freeRecv = e.freeRecv[:n-1]
		return r
	}
	return new(recvReq)
}

func (e *Endpoint) releaseRecvLocked(r *recvReq) {
	if r.helper || e.state != stateRunning && e.state != stateIdle || len(e.freeRecv) >= int(e.rqDepth) {
		return
	}
	*r = recvReq{}
	e.freeRecv = append(e.freeRecv, r)
}

func (e *Endpoint) emitLocked(cq *CQ, waiter chan Completion, c *Completion) {
	if waiter != nil {
		waiter <- *c // capacity 1, one completion per request
		return
	}
	overflow, claimed := cq.push(c, e.rxEmit || e.txEmit)
	if claimed {
		bit := uint8(2)
		if cq == e.sendCQ {
			bit = 1
		}
		if e.rxEmit {
			e.rxDeferred |= bit
		} else {
			e.txDeferred |= bit
		}
	}
	if overflow && e.state != stateDown {
		e.cqOverflow = true
	}
}

// checkOverflowLocked terminates the endpoint after one of its completions
// overflowed a CQ (RFC 5040 §8.1.1 item 10).
func (e *Endpoint) checkOverflowLocked() {
	if e.cqOverflow {
		e.cqOverflow = false
		e.failLocked(&TerminateError{Code: iwarp.Term.LocalCatastrophic, Err: errCQOverflow},
			&termHeader{Code: iwarp.Term.LocalCatastrophic}, closeGraceful)
	}
}

// waitHelper waits for a helper's completion. If ctx ends while the request
// can still be withdrawn it is canceled; a Read or Atomic already sent is
// abandoned (its completion then goes to the CQ); a Send or
// Write already handed to DDP is waited for, since DDP is reading its
// buffer.
func (e *Endpoint) waitHelper(ctx context.Context, r *sendReq, w chan Completion) (Completion, error) {
	select {
	case c := <-w:
		e.helperDone(r, w)
		return c, c.Err
	case <-ctx.Done():
	}
	e.mu.Lock()
	if !r.issued && !r.done {
		r.canceled = true
		c := Completion{Err: ctx.Err()}
		e.finishLocked(r, c)
		e.checkOverflowLocked()
		e.mu.Unlock()
		return c, ctx.Err()
	}
	if !r.done && isORD(r.wr.Op) {
		r.waiter, r.canceled = nil, true
		e.mu.Unlock()
		return Completion{}, ctx.Err()
	}
	e.mu.Unlock()
	c := <-w
	e.helperDone(r, w)
	return c, c.Err
}

// recvHelperDone is helperDone for Recv.
func (e *Endpoint) recvHelperDone(r *recvReq, w chan Completion) {
	putWaiter(w)
	e.mu.Lock()
	r.helper = false
	e.releaseRecvLocked(r)
	e.mu.Unlock()
}

// helperDone recycles a Do's request and channel once its
// completion was received: the endpoint is done with both (finishLocked
// ran, under mu, before the completion was sent), and so is the helper.
func (e *Endpoint) helperDone(r *sendReq, w chan Completion) {
	putWaiter(w)
	e.mu.Lock()
	r.helper = false
	e.releaseSendLocked(r)
	e.mu.Unlock()
}

// waiterPool recycles the completion channels of Do and recvWait: a new
// one per call would be an
// allocation per operation. A channel goes back only once its one
// completion was received; one a canceled call leaves behind is dropped.
var waiterPool = sync.Pool{New: func() any { return make(chan Completion, 1) }}

func getWaiter() chan Completion  { return waiterPool.Get().(chan Completion) }
func putWaiter(w chan Completion) { waiterPool.Put(w) }

// Do posts wr and waits for its completion (RFC 5040 §5.5: a Send or
// Write completes once handed to DDP, rule 14; a Read once the Read
// Response was placed, rule 19), which it returns instead of the send
// CQ; Completion.Orig holds an Atomic's original value. Unsignaled is
// ignored. If ctx ends first, a request not yet issued is withdrawn; a
// Read or Atomic already sent completes later on the send CQ (with
// wr.ID); a Send or Write being sent is waited for.
func (e *Endpoint) Do(ctx context.Context, wr SendWR) (Completion, error) {
	wr.Unsignaled = false
	w := getWaiter()
	r, err := e.postSend(&wr, w)
	if err != nil {
		putWaiter(w) // never given to a request
		return Completion{}, err
	}
	return e.waitHelper(ctx, r, w)
}

// recvWait posts buf and waits for the Send or Immediate Data that consumes it.
// If ctx ends first, buf stays posted (DDP cannot withdraw a posted
// buffer): the message that later fills it is reported on RecvCQ with
// HelperWRID, and recvWait returns ctx.Err().
func (e *Endpoint) recvWait(ctx context.Context, buf []byte) (Completion, error) {
	w := getWaiter()
	r, err := e.postRecv(recvWR{ID: helperWRID, Buf: buf}, w)
	if err != nil {
		putWaiter(w) // never given to a request
		return Completion{}, err
	}
	select {
	case c := <-w:
		e.recvHelperDone(r, w)
		return c, c.Err
	case <-ctx.Done():
	}
	e.mu.Lock()
	select {
	case c := <-w:
		e.mu.Unlock()
		e.recvHelperDone(r, w)
		return c, c.Err
	default:
	}
	r.waiter = nil
	e.mu.Unlock()
	return Completion{}, ctx.Err()
}

// Close performs a graceful teardown (RFC 5040 §6.2: ULP graceful, then
// LLP graceful termination): no more work requests are accepted, it waits
// until the send queue is drained, every outstanding Read and Atomic has
// completed and every inbound request was answered, then flushes the
// Posted receives, closes the LLP stream and waits for the peer to close
// its side. If ctx ends first, the stream is aborted (everything still
// Posted is flushed) and ctx.Err() is returned. Closing an endpoint that
// already stopped waits for Done.
func (e *Endpoint) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.state == stateIdle {
		e.state = stateDown
		e.down.Store(true)
		e.err = ErrClosed
		e.mu.Unlock()
		e.pd.removeEndpoint(e)
		err := e.s.Close()
		e.mu.Lock()
		fs := e.finishDoneLocked()
		e.mu.Unlock()
		for _, f := range fs {
			go f()
		}
		return err
	}
	if e.state == stateRunning {
		e.state = stateClosing
		e.kickTxLocked()
	}
	var result error
	for e.state == stateClosing {
		if e.sq.Len() == 0 && e.order.Len() == 0 && e.irq.Len() == 0 && !e.respBusy && !e.issuing {
			e.failLocked(ErrClosed, nil, closeGraceful)
			break
		}
		if e.closeWait == nil {
			e.closeWait = make(chan struct{})
		}
		w := e.closeWait
		e.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
		}
		e.mu.Lock()
		if ctx.Err() != nil && e.state == stateClosing {
			result = ctx.Err()
			e.failLocked(fmt.Errorf("rdmap: close: %w", ctx.Err()), nil, closeAbort)
		}
	}
	e.mu.Unlock()
	done := e.Done()
	select {
	case <-done:
	case <-ctx.Done():
		if result == nil {
			result = ctx.Err()
		}
		_ = e.s.Abort()
		<-done
	}
	return result
}

// Abort performs an RDMAP Abortive Termination requested by the local user
// (RFC 5040 §6.2.1): a Terminate "local catastrophic error" is sent, every
// Posted work request is flushed and the LLP stream is closed. It does not
// wait; see Done.
func (e *Endpoint) Abort() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.state {
	case stateIdle:
		return fmt.Errorf("rdmap: abort: %w", errNotStarted)
	case stateDown:
		return fmt.Errorf("rdmap: abort: %w", ErrClosed)
	}
	e.failLocked(&TerminateError{Code: iwarp.Term.LocalCatastrophic, Err: errAbortedByUser},
		&termHeader{Code: iwarp.Term.LocalCatastrophic}, closeGraceful)
	return nil
}

var errAbortedByUser = errors.New("rdmap: aborted by the local user")

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
