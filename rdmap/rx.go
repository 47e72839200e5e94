package rdmap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/sctp-rdma/sctp-rdma/ddp"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// errRxDown is returned by the ddp.ULP methods once the endpoint is down:
// the DDP layer then stops placing (RFC 5041 §7.1).
var errRxDown = errors.New("rdmap: endpoint down, segment dropped")

// rxFault is an error the RDMAP receive path detected (RFC 5040 §7.2,
// RFC 7306 §8.2), with its Terminate code and, for a Read Request, the RDMA
// header to send back.
type rxFault struct {
	code   iwarp.TermCode
	reason string
	rdma   *readRequest
	// Header copies for faults found outside the DDP receive path (by the
	// responder).
	ddpHdr []byte
	segLen int
}

// Error implements error.
func (f *rxFault) Error() string { return "rdmap: " + f.reason + " [" + f.code.String() + "]" }

func newFault(code iwarp.TermCode, format string, a ...any) *rxFault {
	return &rxFault{code: code, reason: fmt.Sprintf(format, a...)}
}

// buildTerminate assembles the Terminate Header for code (RFC 5040 §4.8
// Figure 10): the DDP header and segment length whenever the error is tied
// to a segment, except for local catastrophic and LLP errors; the Read
// Request header when the error concerns a Read Request (§7.1 case 3).
func buildTerminate(code iwarp.TermCode, hdr []byte, segLen int, rdma *readRequest) *termHeader {
	t := &termHeader{Code: code}
	if len(hdr) == 0 || code.Layer == iwarp.LayerLLP || (code.Layer == iwarp.LayerRDMA && code.EType == iwarp.RDMAETypeLocalCatastrophic) {
		return t
	}
	t.M, t.D = true, true
	t.SegmentLen = uint16(min(segLen, 0xffff))
	t.DDPHeader = hdr
	if rdma != nil {
		t.R, t.RDMAHeader = true, *rdma
	}
	return t
}

func (f *rxFault) terminate() *termHeader { return buildTerminate(f.code, f.ddpHdr, f.segLen, f.rdma) }

func (f *rxFault) terminateError() *TerminateError {
	t := f.terminate()
	te := &TerminateError{Code: f.code, Err: f, DDPHeader: t.DDPHeader, SegmentLen: t.SegmentLen, HasSegmentLen: t.M}
	if t.R {
		te.RDMAHeader = t.RDMAHeader.append(nil)
	}
	return te
}

// fault builds the rxFault of an inbound request that failed in the
// responder, with the request's own DDP header.
func (j *inbound) fault(code iwarp.TermCode, reason string) *rxFault {
	f := &rxFault{code: code, reason: reason, ddpHdr: append([]byte(nil), j.ddpHdr[:]...), segLen: j.segLen}
	if !j.atomic {
		rr := j.rr
		f.rdma = &rr
	}
	return f
}

// readFaultCode maps an STag fault on a Read Request or Atomic Request to
// the RDMA layer Remote Protection code (RFC 5040 §7.2 checks 4a-4e).
func readFaultCode(f stagFault) iwarp.TermCode {
	switch f {
	case faultInvalidSTag:
		return iwarp.Term.InvalidSTag
	case faultNotAssociated:
		return iwarp.Term.STagNotAssociated
	case faultAccess:
		return iwarp.Term.AccessRights
	case faultBounds:
		return iwarp.Term.BaseBounds
	case faultWrap:
		return iwarp.Term.TOWrap
	}
	return iwarp.Term.ProtectionUnspecified
}

// writeFault maps an STag fault on an RDMA Write segment. Incoming RDMA
// Writes are validated by the DDP layer (RFC 5040 §7.2 item 1), so every
// fault is a DDP tagged buffer error (RFC 5041 §7.1 tagged checks, §7.2
// Layer 1, Type 1). A missing remote write right makes the STag invalid for
// the Write (check 1): DDP has no access-rights code and RFC 5040 §4.8
// Figure 10 keeps the RDMA layer's Remote Protection Error for the Read
// Request and the Sends with Invalidate, so it is Invalid STag (as Linux
// siw reports it).
func writeFault(f stagFault) error {
	switch f {
	case faultInvalidSTag, faultAccess:
		return iwarpwire.NewDDPError(iwarp.Term.DDPInvalidSTag, nil)
	case faultNotAssociated:
		return iwarpwire.NewDDPError(iwarp.Term.DDPSTagNotAssociated, nil)
	case faultBounds:
		return iwarpwire.NewDDPError(iwarp.Term.DDPBaseBounds, nil)
	case faultWrap:
		return iwarpwire.NewDDPError(iwarp.Term.DDPTOWrap, nil)
	}
	// No other fault exists; Remote Operation is the error type Figure 10
	// allows for any message.
	return newFault(iwarp.Term.OperationUnspecified, "RDMA Write refused")
}

func aligned8(b []byte) bool { return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 == 0 }

func parseCtl(v uint8) (control, error) {
	b := [1]byte{v}
	c, _, err := parseControl(b[:])
	return c, err
}

// TaggedTarget implements ddp.ULP: it validates a non-empty tagged segment
// (RDMA Write or Read Response) and returns the memory to place it into.
// Called by the ddp.Receiver only.
func (u *ddpULP) TaggedTarget(h *iwarpwire.DDPTaggedHeader, length int) ([]byte, error) {
	e := (*Endpoint)(u)
	if e.down.Load() {
		return nil, errRxDown
	}
	c, err := parseCtl(h.RsvdULP)
	if err != nil {
		return nil, err
	}
	if err := e.rtrTagged(h, length); err != nil {
		return nil, err
	}
	switch c.Opcode {
	case iwarp.RDMAPOpWrite:
		buf, _, f := e.dev.remote(e, h.STag, h.TO, uint64(length), RemoteWrite)
		if f != faultNone {
			return nil, writeFault(f)
		}
		return buf, nil
	case iwarp.RDMAPOpReadResponse:
		return e.readResponseTarget(h, length)
	}
	return nil, newFault(iwarp.Term.UnexpectedOpcode, "%v in a tagged DDP segment", c.Opcode)
}

// readResponseTarget accepts a Read Response segment only for the sink
// range of the oldest outstanding Read Request (RFC 5040 §5.2.2: responses
// come in request order, and the Data Sink MAY validate STag, TO and
// length). A response without an outstanding Read is an unexpected opcode;
// another STag is a DDP "invalid STag", a range outside the request a DDP
// "base or bounds violation".
func (e *Endpoint) readResponseTarget(h *iwarpwire.DDPTaggedHeader, length int) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.orq.Len() == 0 || e.orq.Front().wr.Op != WRRead {
		return nil, newFault(iwarp.Term.UnexpectedOpcode, "RDMA Read Response without an outstanding RDMA Read Request")
	}
	r := e.orq.Front()
	if h.STag != r.sinkSTag || r.wr.Sink == nil {
		return nil, iwarpwire.NewDDPError(iwarp.Term.DDPInvalidSTag,
			fmt.Errorf("read response STag %#08x, outstanding read sink %#08x", h.STag, r.sinkSTag))
	}
	n := uint64(length)
	if h.TO < r.sinkTO || h.TO-r.sinkTO > uint64(r.wr.Length) || n > uint64(r.wr.Length)-(h.TO-r.sinkTO) {
		return nil, iwarpwire.NewDDPError(iwarp.Term.DDPBaseBounds,
			fmt.Errorf("read response TO %#x+%d outside the requested %#x+%d", h.TO, n, r.sinkTO, r.wr.Length))
	}
	m := r.wr.Sink
	d := e.dev
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !m.valid || m.key != uint8(h.STag) || m.access&LocalWrite == 0 {
		return nil, iwarpwire.NewDDPError(iwarp.Term.DDPInvalidSTag,
			errors.New("read sink MR was invalidated or re-registered"))
	}
	buf, f := m.window(h.TO, n)
	if f != faultNone {
		return nil, writeFault(f)
	}
	return buf, nil
}

// CheckUntagged implements ddp.ULP: RFC 5040 §7.2 checks 2 and 3 (valid
// opcode, valid RDMAP version) and that the opcode belongs to the segment's
// queue (RFC 5040 Figure 4, RFC 7306 Figure 2), else "Unexpected OpCode".
// Called by the ddp.Receiver only.
func (u *ddpULP) CheckUntagged(h *iwarpwire.DDPUntaggedHeader) error {
	e := (*Endpoint)(u)
	if e.down.Load() {
		return errRxDown
	}
	if h.QN >= numQueues {
		return nil // DDP reports "invalid QN" (RFC 5041 §7.2)
	}
	c, err := parseCtl(h.RsvdULP[0])
	if err != nil {
		return err
	}
	if qn, ok := opQN(c.Opcode); !ok || qn != h.QN {
		return newFault(iwarp.Term.UnexpectedOpcode, "%v on untagged queue %d", c.Opcode, h.QN)
	}
	return e.rtrUntagged(h)
}

// Deliver implements ddp.ULP: it processes one complete DDP message in
// order. Called by the ddp.Receiver only, with mu held
// (ddp.NewReceiverGuarded).
func (u *ddpULP) Deliver(m *ddp.Message) error {
	e := (*Endpoint)(u)
	if e.down.Load() {
		return errRxDown
	}
	if e.rtrWait == 0 && !m.Tagged && m.Untag.QN == iwarpwire.RDMAPQNSend {
		// The data path of Sends and Immediate Data (what the rest of
		// Deliver and deliver do for them, without their calls).
		op := opcode(m.Untag.RsvdULP[0] & 0x0f)
		n := m.Length
		if op == iwarp.RDMAPOpImmediate || op == iwarp.RDMAPOpImmediateSE {
			n = 0
		}
		e.counters().countRecv(op, n)
		return e.deliverSend(m, op)
	}
	if consumed, err := e.rtrDeliver(m); consumed || err != nil {
		return err // RFC 6581 §9.2: the RTR has no completion
	}
	// Counted before it is processed, so that a completion the ULP polls
	// is never ahead of the counters; Terminates are counted as parsed.
	switch op := opcode(m.Untag.RsvdULP[0] & 0x0f); {
	case m.Tagged:
		e.counters().countRecv(opcode(m.Tag.RsvdULP&0x0f), m.Length)
	case m.Untag.QN == iwarpwire.RDMAPQNSend && op != iwarp.RDMAPOpImmediate && op != iwarp.RDMAPOpImmediateSE:
		e.counters().countRecv(op, m.Length)
	case m.Untag.QN != iwarpwire.RDMAPQNTerminate:
		e.counters().countRecv(op, 0)
	}
	return e.deliver(m)
}

// deliver dispatches one complete message by its queue and opcode.
func (e *Endpoint) deliver(m *ddp.Message) error {
	if m.Tagged {
		c, err := parseCtl(m.Tag.RsvdULP) // zero-length messages were not checked yet
		if err != nil {
			return err
		}
		switch c.Opcode {
		case iwarp.RDMAPOpWrite:
			return nil // placed; not delivered to the ULP (RFC 5040 §5.1)
		case iwarp.RDMAPOpReadResponse:
			return e.completeRead(m)
		}
		return newFault(iwarp.Term.UnexpectedOpcode, "%v in a tagged DDP message", c.Opcode)
	}
	op := opcode(m.Untag.RsvdULP[0] & 0x0f)
	switch m.Untag.QN {
	case iwarpwire.RDMAPQNSend:
		return e.deliverSend(m, op)
	case iwarpwire.RDMAPQNReadRequest:
		if op == iwarp.RDMAPOpReadRequest {
			return e.deliverReadRequest(m)
		}
		return e.deliverAtomicRequest(m)
	case iwarpwire.RDMAPQNTerminate:
		return e.deliverTerminate(m)
	case iwarpwire.RDMAPQNAtomicResponse:
		return e.deliverAtomicResponse(m)
	}
	return newFault(iwarp.Term.OperationUnspecified, "message on queue %d", m.Untag.QN)
}

// completeRead completes the oldest outstanding Read (RFC 5040 §5.5 rules
// 11 and 19). mu is held (Deliver).
func (e *Endpoint) completeRead(m *ddp.Message) error {
	if e.orq.Len() == 0 || e.orq.Front().wr.Op != WRRead {
		return newFault(iwarp.Term.UnexpectedOpcode, "RDMA Read Response without an outstanding RDMA Read Request")
	}
	r := e.orq.Front()
	if m.Tag.STag != r.sinkSTag {
		return iwarpwire.NewDDPError(iwarp.Term.DDPInvalidSTag,
			fmt.Errorf("read response STag %#08x, outstanding read sink %#08x", m.Tag.STag, r.sinkSTag))
	}
	if uint64(m.Length) != uint64(r.wr.Length) {
		return iwarpwire.NewDDPError(iwarp.Term.DDPBaseBounds,
			fmt.Errorf("read response of %d octets for a read of %d", m.Length, r.wr.Length))
	}
	e.orq.Pop()
	e.kickTxLocked() // an ORD slot is free
	e.rxEmitBegin()
	e.finishLocked(r, Completion{Length: m.Length})
	e.rxEmitEnd()
	e.checkOverflowLocked()
	return nil
}

// deliverSend completes the oldest posted receive with a Send or Immediate
// Data (RFC 5040 §5.3, RFC 7306 §6.3). mu is held (Deliver).
func (e *Endpoint) deliverSend(m *ddp.Message, op opcode) error {
	if e.rq.Len() == 0 || e.rq.Front().seq != m.Cookie {
		return errRxDown // flushed meanwhile
	}
	r := e.rq.Front()
	c := Completion{WRID: r.wr.ID, Op: WRRecv, Length: m.Length, Solicited: opSolicited(op), Buf: r.wr.Buf}
	switch {
	case op == iwarp.RDMAPOpImmediate || op == iwarp.RDMAPOpImmediateSE:
		imm, _, err := parseImmediate(m.Buffer) // RFC 7306 §6.3: exactly 8 octets
		if err != nil {
			return err
		}
		c.Op, c.Imm, c.HasImm, c.Length = wrRecvImm, imm.Data, true, 0
	case iwarpwire.HasInvalidateSTag(op):
		// RFC 5040 §5.3, §7.2 checks 4 and 5: invalidate before the Send is
		// delivered.
		stag := binary.BigEndian.Uint32(m.Untag.RsvdULP[1:5])
		if code, ok := e.dev.invalidateRemote(e, stag); !ok {
			return newFault(code, "Send with Invalidate of STag %#08x", stag)
		}
		c.InvalidatedSTag = stag
	}
	e.rq.Pop()
	e.rxEmitBegin()
	e.emitLocked(e.recvCQ, r.waiter, &c)
	e.rxEmitEnd()
	e.releaseRecvLocked(r)
	e.checkOverflowLocked()
	return nil
}

// repost gives an internal queue's buffer back to DDP (a credit,
// ddp.Receiver.PostCredits).
func (e *Endpoint) repost(qn uint32) error {
	if err := e.recv.PostCredits(qn, 1, internalQueues(0, 0)[qn].size); err != nil {
		return errRxDown
	}
	return nil
}

// deliverReadRequest validates an RDMA Read Request (RFC 5040 §7.2 "On
// Incoming RDMA Request Messages" checks 4a-4e, skipped for a zero-length
// read per §5.2.1) and queues it for the responder, enforcing IRD.
func (e *Endpoint) deliverReadRequest(m *ddp.Message) error {
	if m.Length != readRequestLen {
		return newFault(iwarp.Term.OperationUnspecified, "RDMA Read Request of %d octets, want %d", m.Length, readRequestLen)
	}
	rr, _, _ := parseReadRequest(m.Buffer)
	if rr.Size > 0 {
		if _, _, f := e.dev.remote(e, rr.SrcSTag, rr.SrcTO, uint64(rr.Size), RemoteRead); f != faultNone {
			bad := rr // only a rejected request's header goes to the heap
			return &rxFault{code: readFaultCode(f), reason: "RDMA Read Request source rejected", rdma: &bad}
		}
	}
	job := inbound{rr: rr}
	return e.queueInbound(m, &job)
}

// deliverAtomicRequest validates an Atomic Request (RFC 7306 §5.2.1,
// §8.2: STag, access, bounds, 64-bit alignment) and queues it.
func (e *Endpoint) deliverAtomicRequest(m *ddp.Message) error {
	if m.Length != atomicRequestLen {
		return newFault(iwarp.Term.OperationUnspecified, "Atomic Request of %d octets, want %d", m.Length, atomicRequestLen)
	}
	ar, _, err := parseAtomicRequest(m.Buffer)
	if err != nil {
		return err
	}
	buf, _, f := e.dev.remote(e, ar.STag, ar.TO, 8, RemoteAtomic)
	if f != faultNone {
		return newFault(readFaultCode(f), "Atomic Request target rejected")
	}
	if !aligned8(buf) {
		return newFault(iwarp.Term.CatastrophicStream, "Atomic Request target TO %#x not 64-bit aligned (RFC 7306 §8.2)", ar.TO)
	}
	job := inbound{atomic: true, ar: ar}
	return e.queueInbound(m, &job)
}

// queueInbound enforces IRD (RFC 5040 §6.1, §8.1.1 item 11; RFC 7306 §5.2:
// Atomic Requests share it) and hands the request to the responder. mu is
// held (Deliver).
func (e *Endpoint) queueInbound(m *ddp.Message, job *inbound) error {
	// The request being answered counts until the last segment of its
	// response is handed to the LLP (respStream): the peer may send a new
	// request only once it has that response, and one that arrives before
	// is one more than IRD (RFC 5040 §6.1).
	n := e.irq.Len()
	if e.respHeld {
		n++
	}
	if n >= int(e.ird) {
		// Linux siw answers an IRQ overflow with RDMAP / Remote Operation /
		// "catastrophic error, localized to RDMAP Stream" (siw_init_rresp).
		f := &rxFault{code: iwarp.Term.CatastrophicStream, reason: fmt.Sprintf("more than IRD=%d inbound requests", e.ird)}
		if !job.atomic {
			rr := job.rr
			f.rdma = &rr
		}
		return f
	}
	m.Untag.Append(job.ddpHdr[:0])
	job.segLen = iwarpwire.DDPUntaggedHeaderLen + m.Length
	e.irq.Push(*job)
	e.kickResponderLocked()
	return e.repost(iwarpwire.RDMAPQNReadRequest)
}

// deliverTerminate surfaces a received Terminate (RFC 5040 §5.4): the
// endpoint goes down without answering it.
func (e *Endpoint) deliverTerminate(m *ddp.Message) error {
	t, _, err := parseTermHeader(m.Buffer)
	te := &TerminateError{Code: t.Code, Remote: true, Err: err}
	if err == nil {
		te.SegmentLen, te.HasSegmentLen = t.SegmentLen, t.M
		te.DDPHeader = append([]byte(nil), t.DDPHeader...)
		if t.R {
			te.RDMAHeader = t.RDMAHeader.append(nil)
		}
	}
	e.counters().countRecv(iwarp.RDMAPOpTerminate, 0)
	if err == nil {
		e.counters().termRecv.Store(packTerm(t.Code))
	}
	e.failLocked(te, nil, closeGraceful) // mu is held (Deliver)
	return errRxDown
}

// deliverAtomicResponse completes the oldest outstanding Atomic (RFC 7306
// §5.2.2, §5.4 rule 7). mu is held (Deliver).
func (e *Endpoint) deliverAtomicResponse(m *ddp.Message) error {
	if m.Length != atomicResponseLen {
		return newFault(iwarp.Term.OperationUnspecified, "Atomic Response of %d octets, want %d", m.Length, atomicResponseLen)
	}
	resp, _, _ := parseAtomicResponse(m.Buffer)
	if e.orq.Len() == 0 || e.orq.Front().wr.Op == WRRead {
		return newFault(iwarp.Term.UnexpectedOpcode, "Atomic Response without an outstanding Atomic Request")
	}
	r := e.orq.Front()
	if resp.ReqID != r.reqID {
		return newFault(iwarp.Term.OperationUnspecified, "Atomic Response for request %d, outstanding %d", resp.ReqID, r.reqID)
	}
	e.orq.Pop()
	e.kickTxLocked()
	e.rxEmitBegin()
	e.finishLocked(r, Completion{Orig: resp.Orig})
	e.rxEmitEnd()
	e.checkOverflowLocked()
	return e.repost(iwarpwire.RDMAPQNAtomicResponse)
}

// Failed implements ddp.ULP: the first receive error of the stream. The
// endpoint sends exactly one Terminate describing it (RFC 5040 §7.1) and
// goes down. Called by the ddp.Receiver only.
func (u *ddpULP) Failed(re *ddp.RecvError) {
	e := (*Endpoint)(u)
	if errors.Is(re.Err, errRxDown) {
		return
	}
	code := iwarp.Term.LocalCatastrophic
	var rdma *readRequest
	var f *rxFault
	var pe *protocolError
	var de *iwarpwire.DDPError
	switch {
	case errors.As(re.Err, &f):
		code, rdma = f.code, f.rdma
	case errors.As(re.Err, &pe):
		code = pe.Code
	case errors.As(re.Err, &de):
		code = de.TermCode()
	}
	t := buildTerminate(code, re.Header, re.SegmentLen, rdma)
	te := &TerminateError{Code: code, Err: re.Err, DDPHeader: t.DDPHeader, SegmentLen: t.SegmentLen, HasSegmentLen: t.M}
	if t.R {
		te.RDMAHeader = t.RDMAHeader.append(nil)
	}
	e.mu.Lock()
	e.failLocked(te, t, closeGraceful)
	e.mu.Unlock()
}

// Closed implements ddp.ULP: the LLP stream's receive side ended. Called
// by the ddp.Receiver only.
func (u *ddpULP) Closed(err error) {
	e := (*Endpoint)(u)
	e.mu.Lock()
	switch {
	case err == nil:
		e.failLocked(ErrPeerClosed, nil, closeGraceful)
	default:
		var le *llp.Error
		if errors.As(err, &le) {
			code := le.TermCode()
			e.failLocked(&TerminateError{Code: code, Err: err}, &termHeader{Code: code}, closeAbort)
		} else {
			e.failLocked(fmt.Errorf("rdmap: LLP stream failed: %w", err), nil, closeAbort)
		}
	}
	e.mu.Unlock()
	e.partDone() // the receive side
}
