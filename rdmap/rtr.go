package rdmap

import (
	"fmt"
	"math"

	"github.com/sctp-rdma/sctp-rdma/ddp"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// The RTR options (RFC 6581 §9.2, Control Flags B, C and D) are
// iwarp.RTR. The RTR is an ordinary, zero-length RDMAP message that the
// connection Initiator sends before any other message in the peer-to-peer
// model (RFC 6581 §5, §9.3); the Responder consumes it without a
// completion. A Send RTR consumes the first MSN of queue 0 (RFC 5041
// §5.3), for which the Responder's endpoint reserves an internal buffer; a
// Write RTR is a zero-length RDMA Write to RTRSTag, TO 0; a Read RTR a
// zero-length RDMA Read Request, source and sink STag RTRSTag, TO 0, which
// the Responder answers with a zero-length Read Response, taking one IRD
// slot at the Responder and one ORD slot at the Initiator (RFC 6581 §9.1).

// rtrSTag is the STag carried by zero-length Write and Read RTRs. The STag
// of a zero-length tagged message is not validated (RFC 5040 §5.2.1,
// §7.2), but Linux siw sends 1 because some hardware (iw_cxgb4) treats
// STag 0 specially; this package does the same.
const rtrSTag uint32 = 1

// rtrCookie marks the internal queue 0 buffer reserved for a Send RTR.
const rtrCookie = math.MaxUint64

// checkRTRConfig validates EndpointConfig.SendRTR and ExpectRTR.
func checkRTRConfig(cfg *EndpointConfig) error {
	const all = iwarp.RTRSend | iwarp.RTRWrite | iwarp.RTRRead
	switch {
	case cfg.SendRTR != 0 && cfg.ExpectRTR != 0:
		return fmt.Errorf("%w: an endpoint either sends (Initiator) or expects (Responder) the iwarp.RTR, not both", ErrInvalidWR)
	case cfg.SendRTR&^all != 0 || cfg.ExpectRTR&^all != 0:
		return fmt.Errorf("%w: unknown RTR option", ErrInvalidWR)
	case cfg.SendRTR != 0 && cfg.SendRTR&(cfg.SendRTR-1) != 0:
		return fmt.Errorf("%w: SendRTR %v: the Initiator sends exactly one RTR (RFC 6581 §9.2)", ErrInvalidWR, cfg.SendRTR)
	case cfg.ExpectRTR&iwarp.RTRSend != 0 && cfg.ExpectRTR != iwarp.RTRSend:
		// A Send RTR takes MSN 1 of queue 0, a Write or Read RTR does not:
		// the Responder must know which one comes to number its receive
		// buffers, so it advertises Send only on its own (RFC 6581 §9.2 lets
		// it reply with a subset).
		return fmt.Errorf("%w: ExpectRTR %v: a Send RTR cannot be expected together with another option", ErrInvalidWR, cfg.ExpectRTR)
	}
	return nil
}

// initRTR sets the RTR state of a new endpoint and, for a Send RTR, posts
// the internal zero-length buffer that receives it as MSN 1 of queue 0
// (before any PostRecv).
func (e *Endpoint) initRTR(cfg *EndpointConfig) error {
	e.rtrSend = cfg.SendRTR
	e.rtrWait = cfg.ExpectRTR
	if e.rtrWait&iwarp.RTRSend != 0 {
		if _, err := e.recv.PostUntagged(iwarpwire.RDMAPQNSend, []byte{}, rtrCookie); err != nil {
			return fmt.Errorf("rdmap: RTR buffer: %w", err)
		}
	}
	return nil
}

// sendRTR sends the Initiator's RTR as the first message on the stream
// (RFC 6581 §5: "The RDMA connection initiator MUST NOT allow any later
// FULPDUs to be transmitted before the RTR indication"). The transmit loop
// calls it before it takes any posted work request. A Read RTR is entered
// in the outbound request queue, without a completion, so that its
// zero-length Read Response completes it like any Read (RFC 5040 §5.2.2).
func (e *Endpoint) sendRTR() error {
	switch e.rtrSend {
	case 0:
		return nil
	case iwarp.RTRRead:
		e.mu.Lock()
		if e.state == stateDown {
			e.mu.Unlock()
			return errTxClosed
		}
		r := &sendReq{wr: SendWR{Op: WRRead}, sinkSTag: rtrSTag, issued: true}
		e.nextReqID++
		r.reqID = e.nextReqID
		// Not in e.order: it never produces a completion.
		e.orq.Push(r)
		e.mu.Unlock()
	}
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	if e.txClosed {
		return errTxClosed
	}
	var err error
	switch e.rtrSend {
	case iwarp.RTRSend:
		_, err = e.sender.SendUntagged(untaggedRsvd(iwarp.RDMAPOpSend, 0), iwarpwire.RDMAPQNSend, nil)
	case iwarp.RTRWrite:
		err = e.sender.SendTagged(iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), rtrSTag, 0, nil)
	case iwarp.RTRRead:
		rr := readRequest{SinkSTag: rtrSTag, SrcSTag: rtrSTag}
		_, err = e.sender.SendUntagged(untaggedRsvd(iwarp.RDMAPOpReadRequest, 0), iwarpwire.RDMAPQNReadRequest, rr.append(e.scratch[:0]))
	}
	if err != nil {
		return fmt.Errorf("rdmap: sending the %v RTR: %w", e.rtrSend, err)
	}
	return nil
}

func noRTR(format string, a ...any) error {
	return newFault(iwarp.Term.NoMatchingRTR, "first message is not the negotiated RTR (RFC 6581 §9.2): "+format, a...)
}

// rtrTagged is the TaggedTarget check while the RTR is awaited: a non-empty
// Tagged segment can never be the RTR.
func (e *Endpoint) rtrTagged(h *iwarpwire.DDPTaggedHeader, length int) error {
	if e.rtrWait == 0 {
		return nil
	}
	return noRTR("tagged segment of %d octets to STag %#08x", length, h.STag)
}

// rtrUntagged is the CheckUntagged check while the RTR is awaited: only a
// Send on queue 0 (Send RTR) or a Read Request on queue 1 (Read RTR) may
// carry it.
func (e *Endpoint) rtrUntagged(h *iwarpwire.DDPUntaggedHeader) error {
	if e.rtrWait == 0 {
		return nil
	}
	op := opcode(h.RsvdULP[0] & 0x0f)
	switch {
	case h.QN == iwarpwire.RDMAPQNTerminate:
		return nil // the Initiator's TERM "no matching RTR" (RFC 6581 §9.2)
	case e.rtrWait&iwarp.RTRSend != 0 && h.QN == iwarpwire.RDMAPQNSend && op == iwarp.RDMAPOpSend:
		return nil
	case e.rtrWait&iwarp.RTRRead != 0 && h.QN == iwarpwire.RDMAPQNReadRequest && op == iwarp.RDMAPOpReadRequest:
		return nil
	}
	return noRTR("%v on queue %d, expecting %v", op, h.QN, e.rtrWait)
}

// rtrDeliver examines the first message while the RTR is awaited. It
// returns consumed = true for a Send or Write RTR, which the Responder
// takes without a completion; a zero-length Read Request RTR goes on to the
// normal Read Request path and is answered with a zero-length Read
// Response (RFC 6581 §9.1, §9.2).
func (e *Endpoint) rtrDeliver(m *ddp.Message) (consumed bool, err error) {
	if e.rtrWait == 0 {
		return false, nil
	}
	want := e.rtrWait
	e.rtrWait = 0
	if m.Tagged {
		c, err := parseCtl(m.Tag.RsvdULP)
		if err != nil {
			return false, err
		}
		if want&iwarp.RTRWrite != 0 && c.Opcode == iwarp.RDMAPOpWrite && m.Length == 0 {
			return true, nil
		}
		return false, noRTR("tagged %v of %d octets, expecting %v", c.Opcode, m.Length, want)
	}
	op := opcode(m.Untag.RsvdULP[0] & 0x0f)
	switch {
	case m.Untag.QN == iwarpwire.RDMAPQNTerminate:
		return false, nil
	case want&iwarp.RTRSend != 0 && m.Untag.QN == iwarpwire.RDMAPQNSend && op == iwarp.RDMAPOpSend && m.Length == 0 && m.Cookie == rtrCookie:
		return true, nil
	case want&iwarp.RTRRead != 0 && m.Untag.QN == iwarpwire.RDMAPQNReadRequest && op == iwarp.RDMAPOpReadRequest && m.Length == readRequestLen:
		rr, _, perr := parseReadRequest(m.Buffer)
		if perr == nil && rr.Size == 0 {
			return false, nil
		}
	}
	return false, noRTR("%v of %d octets on queue %d, expecting %v", op, m.Length, m.Untag.QN, want)
}
