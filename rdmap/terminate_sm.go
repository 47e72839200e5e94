package rdmap

import (
	"fmt"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// This file is the endpoint's termination state machine (RFC 5040 §5.4,
// §6.2, §7.1):
//
//	Idle ──Start──▶ Running ──Close──▶ Closing ──drained──┐
//	                   │                  │                ▼
//	                   └──── error ───────┴─────────────▶ Down
//
// Down is entered exactly once (failLocked), for one of: an error detected
// on the receive path (a Terminate is sent), a Terminate received (none is
// sent back), a local failure (send error, CQ overflow, Abort: a Terminate
// "local catastrophic" is attempted), the LLP stream failing or ending, or
// Close. On entry every work request still posted completes once, in
// order, with an error wrapping ErrFlushed and the cause; then the
// terminator goroutine sends the Terminate, if any, as the stream's last
// message and closes or aborts the LLP stream. Done is closed once the
// LLP's delivery has ended and every goroutine has returned.

type closeMode uint8

const (
	closeGraceful closeMode = iota // llp.Stream.Close: the Terminate is delivered first (§6.2.1)
	closeAbort                     // llp.Stream.Abort
)

// failLocked moves the endpoint to Down with cause, flushes every posted
// work request, and starts the terminator, which sends t (if non-nil) and
// tears the LLP stream down. Only the first call has an effect (RFC 5040
// §7.1 rule 4: the first error is the one reported). e.mu is held.
func (e *Endpoint) failLocked(cause error, t *termHeader, how closeMode) {
	if e.state == stateDown {
		return
	}
	started := e.state != stateIdle
	e.state = stateDown
	e.down.Store(true)
	e.err = cause

	// Flush (RFC 5040 §5.4: "Completes in error all ULP Operations that
	// have not been provided to the DDP layer"; §6.2.1: outstanding
	// operations "SHOULD be considered Completed in error").
	e.recv.Drain()
	ferr := fmt.Errorf("%w: %w", ErrFlushed, cause)
	flushed := Completion{Err: ferr}
	pending := make([]*sendReq, e.order.Len())
	for i := range pending {
		pending[i] = e.order.At(i)
	}
	for _, r := range pending {
		switch {
		case r.done:
		case r.issued && !isORD(r.wr.Op):
			// The transmit loop is handing this Send or Write to DDP
			// right now: it completes it when DDP returns (RFC 5040 §5.5
			// rule 14), in error only if DDP did not take it (§5.4 flushes
			// what was not provided to DDP).
		default:
			e.finishLocked(r, flushed)
		}
	}
	e.sq.Reset()
	e.orq.Reset()
	e.irq.Reset()
	for e.rq.Len() > 0 {
		r := e.rq.Pop()
		e.emitLocked(e.recvCQ, r.waiter, &Completion{WRID: r.wr.ID, Op: WRRecv, Err: ferr, Buf: r.wr.Buf})
	}
	e.cqOverflow = false
	e.progressLocked()

	if started {
		// Counted before the part that called failLocked can end: the
		// endpoint is finished only after its Terminate went out.
		e.parts.Add(1)
		go e.terminator(t, how)
	}
}

// terminator sends the single Terminate (on QN 2, RFC 5040 §5.4), after
// which nothing else is sent, then closes or aborts the LLP stream.
func (e *Endpoint) terminator(t *termHeader, how closeMode) {
	defer e.partDone()
	locked := e.sendMu.TryLock()
	aborted := false
	if !locked {
		// A send is under way, perhaps stuck on a peer that stopped
		// reading (a full TCP window, a frozen process): give it a moment,
		// then abort the LLP stream, which fails the stuck send, rather
		// than wait for ever to put the Terminate behind it. (The endpoint
		// is going down on an error or an abort here, never a graceful
		// close, so nothing the user asked to be delivered is lost by it.)
		deadline := time.Now().Add(abortGrace)
		for !locked && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			locked = e.sendMu.TryLock()
		}
		if !locked {
			_ = e.s.Abort()
			aborted = true
		}
	}
	if !locked {
		e.sendMu.Lock()
	}
	if !e.txClosed {
		e.txClosed = true
		if t != nil && !aborted {
			// The Terminate itself may find the LLP unable to send: a full
			// window, or an MPA responder whose initiator never sent its
			// first FPDU (RFC 5044 §7.1.2 rule 4: the responder sends nothing before
			// it). It gets the same grace as a send under way, then the
			// LLP stream is aborted, failing the send.
			stuck := time.AfterFunc(abortGrace, func() { _ = e.s.Abort() })
			var buf [terminateMaxLen]byte
			_, err := e.sender.SendUntagged(untaggedRsvd(iwarp.RDMAPOpTerminate, 0), iwarpwire.RDMAPQNTerminate, t.append(buf[:0]))
			if !stuck.Stop() {
				aborted = true
			}
			e.mu.Lock()
			e.termSent, e.termErr = err == nil, err
			e.mu.Unlock()
			if err == nil {
				e.counters().countSent(iwarp.RDMAPOpTerminate, 0)
				e.counters().termSent.Store(packTerm(t.Code))
			}
		}
	}
	e.sendMu.Unlock()
	switch {
	case aborted:
	case how == closeAbort:
		_ = e.s.Abort()
	default:
		_ = e.s.Close()
	}
}

// abortGrace is how long an abort waits for a send under way before it
// aborts the LLP stream beneath it (and sends no Terminate).
const abortGrace = 500 * time.Millisecond

// terminateSent reports whether this endpoint put a Terminate on the wire,
// and the LLP's error if sending it failed.
func (e *Endpoint) terminateSent() (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.termSent, e.termErr
}
