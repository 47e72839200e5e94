package rdmap

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// errTxClosed reports a send attempted after the Terminate (or teardown):
// RFC 5040 §5.4 "After sending a Terminate Message ... the Local Peer MUST
// NOT send any more Messages".
var errTxClosed = errors.New("rdmap: stream no longer sends")

func untaggedRsvd(op opcode, inv uint32) [5]byte {
	var r [5]byte
	r[0] = iwarpwire.RDMAPControlByte(op)
	binary.BigEndian.PutUint32(r[1:], inv)
	return r
}

// txFailure is how the endpoint goes down when handing a message to DDP
// failed with err. An error the LLP reports as an *llp.Error (for MPA, "TCP
// connection lost", RFC 5044 §8 code 1) is an LLP error, Terminate layer 2
// (RFC 5040 §4.8 Figure 9), exactly as when the receive side notices the
// same failure first (Closed); anything else is a local catastrophic
// error.
func txFailure(err error) (*TerminateError, *termHeader, closeMode) {
	var le *llp.Error
	if errors.As(err, &le) {
		code := le.TermCode()
		return &TerminateError{Code: code, Err: err}, &termHeader{Code: code}, closeAbort
	}
	return &TerminateError{Code: iwarp.Term.LocalCatastrophic, Err: err}, &termHeader{Code: iwarp.Term.LocalCatastrophic}, closeAbort
}

// inlineIssueMax is the largest Send or Write a posting goroutine hands to
// DDP itself when the send queue is idle (see postSend): small enough that
// the LLP takes it without waiting for flow control in practice, so that
// posting stays quick, and large enough for every latency-bound message.
const inlineIssueMax = 4096

// takeLocked takes the head of the send queue for issue, if it may go now
// and nobody else is issuing (the one-writer rule: requests reach DDP one
// at a time, in submission order, RFC 5040 §5.5 rule 13). A Read or Atomic
// at the head waits while ORD requests are outstanding (RFC 5040 §6.1,
// RFC 7306 §5.2), and so does everything behind it. mu is held.
func (e *Endpoint) takeLocked() *sendReq {
	for e.sq.Len() > 0 && e.sq.Front().canceled {
		e.sq.Pop()
	}
	if e.issuing || !e.txReady || e.sq.Len() == 0 || (isORD(e.sq.Front().wr.Op) && e.orq.Len() >= int(e.ord)) {
		return nil
	}
	r := e.sq.Pop()
	e.issuing, e.issuingReq = true, r
	r.issued = true
	if isORD(r.wr.Op) {
		e.nextReqID++
		r.reqID = e.nextReqID
		// Registered before the request leaves, so that its response
		// finds it (RFC 5040 §5.5 rule 19).
		e.orq.Push(r)
	}
	return r
}

// issuedLocked ends the issue of r that returned err: a Send or Write
// completes once DDP has it (RFC 5040 §5.5 rule 14); a failure takes the
// endpoint down. The transmit loop is woken for what queued meanwhile. mu
// is held.
func (e *Endpoint) issuedLocked(r *sendReq, err error) {
	e.issuing = false
	switch {
	case err != nil:
		if !errors.Is(err, errTxClosed) {
			e.failLocked(txFailure(err))
		}
		// A Send or Write being issued is left to its issuer by
		// failLocked (see there); an ORD request was flushed there.
		e.finishLocked(r, Completion{Err: fmt.Errorf("%w: %w", ErrFlushed, err)})
	case !isORD(r.wr.Op):
		e.finishLocked(r, Completion{Length: len(r.wr.Local)})
		e.checkOverflowLocked()
	}
	if e.sq.Len() > 0 {
		e.kickTxLocked()
	}
	e.issuingReq = nil
	if r.releaseAfterIssue {
		e.releaseSendLocked(r)
	}
}

// kickTxLocked starts the transmit goroutine for what the send queue
// holds, unless it runs, a poster is issuing inline (its issuedLocked
// kicks again), or the endpoint is not started (Start starts it) or down.
// mu is held.
func (e *Endpoint) kickTxLocked() {
	if e.txRunning || e.issuing || e.draining || e.sq.Len() == 0 || (e.state != stateRunning && e.state != stateClosing) {
		return
	}
	e.txRunning = true
	e.parts.Add(1) // the receive side is still a part: the endpoint is not done
	go e.txLoopFn()
}

// txLoop processes the send queue in submission order (RFC 5040 §5.5 rule
// 13); its first run sends the RTR the connection model asks for. A
// posting goroutine that finds the queue idle issues a small request
// itself (postSend); the loop takes everything else, and ends when nothing
// may be issued now (an empty queue, or a Read or Atomic waiting for an
// ORD slot): kickTxLocked starts it again, so that an idle stream holds no
// goroutine for it.
func (e *Endpoint) txLoop() {
	defer e.partDone()
	e.mu.Lock()
	first := !e.txReady
	e.mu.Unlock()
	if first {
		if err := e.sendRTR(); err != nil && !errors.Is(err, errTxClosed) {
			e.mu.Lock()
			e.failLocked(txFailure(err))
			e.mu.Unlock()
		}
		e.mu.Lock()
		e.txReady = true
		e.mu.Unlock()
	}
	e.mu.Lock()
	held := e.issueAllLocked(true)
	e.txRunning = false
	e.mu.Unlock()
	if held {
		e.flushHeld()
	}
}

// issueAllLocked issues, in submission order, every request takeLocked
// gives, releasing mu around each issue. A Read or Atomic Request with
// another request right behind it that may go at once leaves with it: the
// requests a user posts together reach the LLP as one packet or one
// writev, not one system call each. Only requests whose message RDMAP
// owns (sendReq.body) are held: a Send's or Write's buffer is the user's
// again once DDP has it (RFC 5040 §5.5 rule 14). It reports whether the
// Last request it issued was held: the caller then flushes it
// (flushHeld); otherwise that request's message carried out whatever
// earlier ones had left in the LLP. mu is held.
func (e *Endpoint) issueAllLocked(tx bool) (held bool) {
	// The transmit loop (tx) hands the completions it makes to the CQ
	// handlers itself, between two issues and holding no lock
	// (CQ.SetHandler): a handler that posts more keeps the loop going without
	// a goroutine woken per completion.
	for e.state != stateDown {
		r := e.takeLocked()
		if r == nil {
			return held
		}
		hold := holdable(r.wr.Op) && e.nextReadyLocked()
		if hold {
			r.inLLP, r.nextHeld, e.held = true, e.held, r
		}
		e.mu.Unlock()
		err := e.issueHold(r, hold)
		e.mu.Lock()
		held = hold && err == nil
		if !hold {
			e.unholdLocked() // the held bodies went out with r's message
		}
		e.txEmit = tx
		e.issuedLocked(r, err)
		e.txEmit = false
		if d := e.txDeferred; d != 0 {
			e.txDeferred = 0
			e.mu.Unlock()
			e.dispatchHandlers(d)
			e.mu.Lock()
		}
	}
	return held
}

// holdable reports whether a request of type op may be left held in the
// LLP (sendReq.body).
func holdable(op WorkType) bool {
	return op == WRRead || op == WRFetchAdd || op == WRCmpSwap
}

// nextReadyLocked reports whether takeLocked, once the request being
// issued is done, will take another at once. mu is held.
func (e *Endpoint) nextReadyLocked() bool {
	for i := range e.sq.Len() {
		r := e.sq.At(i)
		if r.canceled {
			continue
		}
		return !isORD(r.wr.Op) || e.orq.Len() < int(e.ord)
	}
	return false
}

// flushHeld sends what the LLP holds of requests issued with hold, when
// no request followed them after all (one was canceled, or the endpoint
// went down).
func (e *Endpoint) flushHeld() {
	e.sendMu.Lock()
	held := e.txHeld
	e.txHeld = false
	var err error
	if held && !e.txClosed {
		err = e.sender.Flush()
	}
	e.sendMu.Unlock()
	if !held && err == nil {
		return // nothing held: a later message carried it (unholdLocked ran)
	}
	e.mu.Lock()
	if err != nil {
		e.failLocked(txFailure(err))
	}
	e.unholdLocked()
	e.mu.Unlock()
}

// unholdLocked ends the hold of the requests issued with hold: the
// message that sent them has returned from the LLP, which reads their
// bodies no more; those that completed meanwhile are recycled now. mu is
// held.
func (e *Endpoint) unholdLocked() {
	for r := e.held; r != nil; {
		next := r.nextHeld
		r.inLLP, r.nextHeld = false, nil
		if r.releaseHeld {
			r.releaseHeld = false
			e.releaseSendLocked(r)
		}
		r = next
	}
	e.held = nil
}

// issue hands the messages of r to DDP.
func (e *Endpoint) issue(r *sendReq) error { return e.issueHold(r, false) }

// issueHold hands the messages of r to DDP; with hold (a holdable
// request) the LLP may keep its message until the next one is issued.
func (e *Endpoint) issueHold(r *sendReq, hold bool) error { return e.issueWR(&r.wr, r, hold) }

// issueWR hands the messages of wr to DDP. r is wr's request, which a Read
// or an Atomic needs (its sink, request identifier and body); the quick
// issue of a Send, Write or Immediate has none (nil).
func (e *Endpoint) issueWR(wr *SendWR, r *sendReq, hold bool) error {
	e.sendMu.Lock()
	if e.txClosed {
		e.sendMu.Unlock()
		return errTxClosed
	}
	var err error
	switch wr.Op {
	case WRSend:
		// One call for the four Sends (RFC 5040 §4.3: the Invalidate STag
		// field is zero but in the two with Invalidate), counted here.
		op := sendOpcode(wr)
		var inv uint32
		if iwarpwire.HasInvalidateSTag(op) {
			inv = wr.InvalidateSTag
		}
		if _, err = e.sender.SendUntagged(untaggedRsvd(op, inv), iwarpwire.RDMAPQNSend, wr.Local); err == nil {
			e.counters().countSent(op, len(wr.Local))
		}
		e.txHeld = hold && err == nil
		e.sendMu.Unlock()
		return err
	case WRWrite, WRWriteImm:
		err = e.sender.SendTagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), wr.RemoteSTag, wr.RemoteTO, wr.Local)
		if err == nil && wr.Op == WRWriteImm {
			err = e.sendImmediate(wr.Imm, wr.Solicited)
		}
	case WRImmediate:
		err = e.sendImmediate(wr.Imm, wr.Solicited)
	case WRRead, WRFetchAdd, WRCmpSwap:
		err = e.issueRequest(wr, r, hold)
	default:
		err = fmt.Errorf("%w: work type %v", ErrInvalidWR, wr.Op)
	}
	if err == nil {
		e.countIssued(wr)
	}
	// What an earlier held request left in the LLP went out with this
	// message, unless this one is held too.
	e.txHeld = hold && err == nil
	e.sendMu.Unlock()
	return err
}

// issueRequest sends the RDMA Read Request or Atomic Request of wr, whose
// request r holds the sink, request identifier and body (RFC 5040 §4.4,
// RFC 7306 §4.3); with hold the LLP may keep it until the next message.
// sendMu is held.
func (e *Endpoint) issueRequest(wr *SendWR, r *sendReq, hold bool) error {
	send := e.sender.SendUntagged
	if hold {
		send = e.sender.SendUntaggedMore
	}
	if wr.Op == WRRead {
		rr := readRequest{SinkSTag: r.sinkSTag, SinkTO: r.sinkTO, Size: wr.Length, SrcSTag: wr.RemoteSTag, SrcTO: wr.RemoteTO}
		_, err := send(untaggedRsvd(iwarp.RDMAPOpReadRequest, 0), iwarpwire.RDMAPQNReadRequest, rr.append(r.body[:0]))
		return err
	}
	ar := atomicRequest{Op: atomicFetchAdd, ReqID: r.reqID, STag: wr.RemoteSTag, TO: wr.RemoteTO,
		Data: wr.Add, Mask: wr.AddMask, CompareMask: ^uint64(0)}
	if wr.Op == WRCmpSwap {
		ar = atomicRequest{Op: atomicCmpSwap, ReqID: r.reqID, STag: wr.RemoteSTag, TO: wr.RemoteTO,
			Data: wr.Swap, Mask: wr.SwapMask, Compare: wr.Compare, CompareMask: wr.CompareMask}
	}
	_, err := send(untaggedRsvd(iwarp.RDMAPOpAtomicRequest, 0), iwarpwire.RDMAPQNReadRequest, ar.Append(r.body[:0]))
	return err
}

// countIssued records the messages of a work request DDP took.
func (e *Endpoint) countIssued(wr *SendWR) {
	c := e.counters()
	switch wr.Op {
	case WRWrite, WRWriteImm:
		c.countSent(iwarp.RDMAPOpWrite, len(wr.Local))
		if wr.Op == WRWriteImm {
			c.countSent(immediateOp(wr.Solicited), 0)
		}
	case WRImmediate:
		c.countSent(immediateOp(wr.Solicited), 0)
	case WRRead:
		c.countSent(iwarp.RDMAPOpReadRequest, 0)
	case WRFetchAdd, WRCmpSwap:
		c.countSent(iwarp.RDMAPOpAtomicRequest, 0)
	}
}

// sendOpcode is the RDMAP opcode of a Send work request (RFC 5040 §4.3).
func sendOpcode(wr *SendWR) opcode {
	switch {
	case wr.Solicited && wr.Invalidate:
		return iwarp.RDMAPOpSendSEInvalidate
	case wr.Solicited:
		return iwarp.RDMAPOpSendSE
	case wr.Invalidate:
		return iwarp.RDMAPOpSendInvalidate
	}
	return iwarp.RDMAPOpSend
}

func immediateOp(se bool) opcode {
	if se {
		return iwarp.RDMAPOpImmediateSE
	}
	return iwarp.RDMAPOpImmediate
}

// sendImmediate sends one Immediate Data message; sendMu is held.
func (e *Endpoint) sendImmediate(imm uint64, se bool) error {
	i := immediate{Data: imm}
	_, err := e.sender.SendUntagged(untaggedRsvd(immediateOp(se), 0), iwarpwire.RDMAPQNSend, i.Append(e.scratch[:0]))
	return err
}

// kickResponderLocked starts the responder goroutine for a request just
// queued, unless it runs (it takes the request before it ends) or the
// endpoint is down. mu is held.
func (e *Endpoint) kickResponderLocked() {
	if e.respRunning || (e.state != stateRunning && e.state != stateClosing) {
		return
	}
	e.respRunning = true
	e.parts.Add(1) // the receive side is still a part: the endpoint is not done
	go e.respLoopFn()
}

// respLoop answers inbound Read and Atomic Requests one at a time in the
// order they were delivered (RFC 5040 §5.5 rules 17 and 20, RFC 7306
// §5.2.2 rule 8, §5.4 rule 8). It runs apart from the receive path, which
// never blocks on the network, and only while requests are queued: it
// ends when the queue is empty (kickResponderLocked starts it again), so
// that an idle stream holds no goroutine for it.
func (e *Endpoint) respLoop() {
	defer e.partDone()
	for {
		e.mu.Lock()
		if e.irq.Len() == 0 || e.state == stateDown {
			e.respRunning = false
			e.mu.Unlock()
			if err := e.flushResp(); err != nil { // the queue was emptied under a hold
				e.mu.Lock()
				e.failLocked(txFailure(err))
				e.mu.Unlock()
			}
			return
		}
		// The request keeps its IRD slot while its response is sent; the
		// slot is freed just before the last segment goes to the LLP
		// (respStream), as the peer may reuse it once it has the response.
		job := e.irq.Pop()
		e.respBusy = true
		e.respHeld = true
		// A Read Response that another response follows at once may have
		// its last segment held by the LLP (llp.Batcher), so that the
		// runs of packets a batching LLP sends span responses instead of
		// ending at each one in a short tail; the last response of the
		// queue sends what is held.
		more := e.irq.Len() > 0 && e.state != stateDown
		e.mu.Unlock()

		fault, err := e.respond(&job, more)
		if err == nil && fault == nil && !more {
			err = e.flushResp()
		}

		e.mu.Lock()
		e.respBusy = false
		e.respHeld = false
		e.progressLocked()
		switch {
		case fault != nil:
			e.failLocked(fault.terminateError(), fault.terminate(), closeGraceful)
		case err != nil && !errors.Is(err, errTxClosed):
			e.failLocked(txFailure(err))
		}
		e.mu.Unlock()
	}
}

// respond executes one inbound request. The request was validated when it
// was delivered; the STag is checked again here because the local user may
// have invalidated it since.
func (e *Endpoint) respond(job *inbound, more bool) (*rxFault, error) {
	if !job.atomic {
		rr := &job.rr
		var data []byte
		if rr.Size > 0 {
			buf, _, f := e.dev.remote(e, rr.SrcSTag, rr.SrcTO, uint64(rr.Size), RemoteRead)
			if f != faultNone {
				return job.fault(readFaultCode(f), "Read Request source no longer valid"), nil
			}
			data = buf
		}
		e.sendMu.Lock()
		defer e.sendMu.Unlock()
		if e.txClosed {
			return nil, errTxClosed
		}
		// RFC 5040 §4.4: Sink STag and TO are copied without interpretation.
		e.respLast, e.respMore = true, more
		err := e.sender.SendTagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpReadResponse), rr.SinkSTag, rr.SinkTO, data)
		e.respLast, e.respMore = false, false
		if err == nil {
			e.counters().countSent(iwarp.RDMAPOpReadResponse, len(data))
		}
		return nil, err
	}
	ar := &job.ar
	orig, f := e.executeAtomic(ar)
	if f != nil {
		return job.fault(*f, "Atomic Request target no longer valid"), nil
	}
	resp := atomicResponse{ReqID: ar.ReqID, Orig: orig}
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	if e.txClosed {
		return nil, errTxClosed
	}
	e.respLast = true
	_, err := e.sender.SendUntagged(untaggedRsvd(iwarp.RDMAPOpAtomicResponse, 0), iwarpwire.RDMAPQNAtomicResponse, resp.Append(e.scratch[:0]))
	e.respLast = false
	if err == nil {
		e.counters().countSent(iwarp.RDMAPOpAtomicResponse, 0)
	}
	return nil, err
}

// respStream is the LLP stream as the DDP sender sees it: while a Read or
// Atomic Response is sent (respLast, under sendMu), the inbound request it
// answers leaves the IRD count just before the response's last segment is
// handed to the LLP (RFC 5040 §6.1). The peer can send its next request
// only after it has that segment, so a request the receive path sees
// before is one too many, and one it sees after is never refused for a
// slot not yet given back.
type respStream Endpoint

// It is the Endpoint itself under another method set (a conversion, not a
// wrapper: one allocation less per stream), forwarding the rest of
// llp.Stream to the endpoint's LLP stream.

var (
	_ llp.Stream  = (*respStream)(nil)
	_ llp.Batcher = (*respStream)(nil)
	_ llp.Floored = (*respStream)(nil)
	_ wireSizer   = (*respStream)(nil)
)

// wireSizer is a Stream's optional WireSize (package llp).
type wireSizer interface{ WireSize(n int) int }

// SendSegment implements llp.Stream.
func (r *respStream) SendSegment(hdr, payload []byte) error {
	e := (*Endpoint)(r)
	if e.respLast && len(hdr) > 0 && iwarpwire.DDPControl(hdr[0])&iwarpwire.DDPControlLast != 0 {
		e.respLast = false
		e.mu.Lock()
		e.respHeld = false
		e.mu.Unlock()
		if b, ok := r.s.(llp.Batcher); ok && e.respMore {
			e.respCorked = true
			return b.SendSegmentMore(hdr, payload)
		}
	}
	e.respCorked = false // what the LLP held leaves with this segment
	return r.s.SendSegment(hdr, payload)
}

// flushResp sends the last segment of a Read Response that the LLP may
// still hold (respond with more), when no response followed it after all.
func (e *Endpoint) flushResp() error {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	if !e.respCorked || e.txClosed {
		return nil
	}
	e.respCorked = false
	return e.sender.Flush()
}

// SendSegmentMore implements llp.Batcher: a segment that is not the last
// of its message frees no IRD slot, and goes to the LLP's batcher when it
// Has one.
func (r *respStream) SendSegmentMore(hdr, payload []byte) error {
	if b, ok := r.s.(llp.Batcher); ok {
		return b.SendSegmentMore(hdr, payload)
	}
	return r.s.SendSegment(hdr, payload)
}

// Flush implements llp.Batcher.
func (r *respStream) Flush() error {
	r.respCorked = false
	if b, ok := r.s.(llp.Batcher); ok {
		return b.Flush()
	}
	return nil
}

// MULPDU implements llp.Stream.
func (r *respStream) MULPDU() int { return r.s.MULPDU() }

// MULPDUFloor implements llp.Floored with the LLP stream's floor, if it
// Has one.
func (r *respStream) MULPDUFloor() int {
	if f, ok := r.s.(llp.Floored); ok {
		return f.MULPDUFloor()
	}
	return 0
}

// WireSize passes on the LLP stream's WireSize (package llp), 0 where it
// has none.
func (r *respStream) WireSize(n int) int {
	if e, ok := r.s.(wireSizer); ok {
		return e.WireSize(n)
	}
	return 0
}

// Start implements llp.Stream.
func (r *respStream) Start(h llp.Handler) { r.s.Start(h) }

// Close implements llp.Stream.
func (r *respStream) Close() error { return r.s.Close() }

// Abort implements llp.Stream.
func (r *respStream) Abort() error { return r.s.Abort() }

// Info implements llp.Stream.
func (r *respStream) Info() llp.Info { return r.s.Info() }

// executeAtomic performs the read-modify-write of an Atomic Request under
// the device's atomic lock (RFC 7306 §5.3), in the byte order of the target
// memory (§5.1.1: "performed in the endian format of the target memory").
func (e *Endpoint) executeAtomic(ar *atomicRequest) (uint64, *iwarp.TermCode) {
	e.dev.atomicMu.Lock()
	defer e.dev.atomicMu.Unlock()
	buf, _, f := e.dev.remote(e, ar.STag, ar.TO, 8, RemoteAtomic)
	if f != faultNone {
		c := readFaultCode(f)
		return 0, &c
	}
	if !aligned8(buf) {
		c := iwarp.Term.CatastrophicStream
		return 0, &c
	}
	orig := binary.NativeEndian.Uint64(buf)
	binary.NativeEndian.PutUint64(buf, ar.apply(orig))
	return orig, nil
}
