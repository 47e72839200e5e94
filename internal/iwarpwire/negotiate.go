package iwarpwire

import (
	"fmt"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// NegotiateResponder applies RFC 6581 §9.1 and §9.2 at the responder.
// local is what the responder's ULP asks for, maxIRD how far it can raise
// its IRD to meet the initiator ORD (a value below local.IRD means "no
// raise"), supported the iwarp.RTR options it can receive (0: all), req the
// initiator's word. It returns the word for the Accept and the depths the
// responder's endpoint runs with:
func NegotiateResponder(local iwarp.Depths, maxIRD int, supported iwarp.RTR, req iwarp.IRDORD) (reply iwarp.IRDORD, d iwarp.Depths) {
	//   - responder ORD = min(local ORD, initiator IRD): "The responder MUST
	//     set its ORD at most to the initiator IRD";
	//   - responder IRD raised towards the initiator ORD, up to maxIRD: "the
	//     responder IRD MAY be increased";
	//   - an initiator ORD of 0x3FFF leaves the local IRD unchanged and is
	//     answered with IRD 0x3FFF; an initiator IRD of 0x3FFF leaves the local
	//     ORD unchanged and is answered with ORD 0x3FFF;
	//   - flag A is echoed (§9.2); with the peer-to-peer model the reply offers
	//     the requested options it supports, or, if none, every option it
	//     supports (the initiator then fails with [iwarp.TermTable].NoMatchingRTR). A
	//     zero-length Send iwarp.RTR takes the first MSN of the Send queue and a
	//     Write or Read iwarp.RTR does not, so the responder must know which will
	//     come: Send is offered only when it is the sole option (§9.2 lets the
	//     responder reply with a subset). A Read iwarp.RTR needs one inbound Read
	//     whatever the initiator ORD, so an IRD of 0 becomes 1 (§9.1: "If the
	//     initiator ORD is insufficient to support the selected connection
	//     model, the responder IRD MAY be increased").
	//
	// Values in local outside 0..iwarp.NoNegotiation are clamped (negative to 0, above
	// 14 bits to iwarp.MaxIRD).
	d = clampDepths(local)
	reply.IRD, reply.ORD = uint16(d.IRD), uint16(d.ORD)
	if req.ORD == iwarp.NoNegotiation {
		reply.IRD = iwarp.NoNegotiation
	} else if d.IRD != iwarp.NoNegotiation && int(req.ORD) > d.IRD && maxIRD > d.IRD {
		d.IRD = min(int(req.ORD), maxIRD, iwarp.MaxIRD)
		reply.IRD = uint16(d.IRD)
	}
	if req.IRD == iwarp.NoNegotiation {
		reply.ORD = iwarp.NoNegotiation
	} else if d.ORD != iwarp.NoNegotiation {
		d.ORD = min(d.ORD, int(req.IRD))
		reply.ORD = uint16(d.ORD)
	}
	if !req.PeerToPeer {
		return reply, d
	}
	if supported&iwarp.RTRAll == 0 {
		supported = iwarp.RTRAll
	}
	supported &= iwarp.RTRAll
	reply.PeerToPeer = true
	reply.RTR = req.RTR & supported
	if reply.RTR == 0 {
		reply.RTR = supported
	}
	if reply.RTR != iwarp.RTRSend && reply.RTR&^iwarp.RTRSend != 0 {
		reply.RTR &^= iwarp.RTRSend
	}
	if reply.RTR&iwarp.RTRRead != 0 && reply.IRD == 0 {
		reply.IRD, d.IRD = 1, 1
	}
	return reply, d
}

// NegotiateInitiator applies RFC 6581 §9.1 at the initiator when the
// responder's Accept arrives: "the initiator MUST set its IRD at least to
// the responder ORD and its ORD at most to the responder IRD". local is
// what the initiator sent, maxIRD how far it can raise its IRD (below
// local.IRD means "no raise"). A responder ORD beyond that is an error
// wrapping iwarp.ErrInsufficientIRD: the initiator "MUST send a TERM message ...
// Error Code 6" ([iwarp.TermTable].InsufficientIRD). 0x3FFF from the responder leaves
// the local value unchanged.
func NegotiateInitiator(local iwarp.Depths, maxIRD int, reply iwarp.IRDORD) (iwarp.Depths, error) {
	d := clampDepths(local)
	if reply.IRD != iwarp.NoNegotiation && d.ORD != iwarp.NoNegotiation {
		d.ORD = min(d.ORD, int(reply.IRD))
	}
	if reply.ORD != iwarp.NoNegotiation && d.IRD != iwarp.NoNegotiation && int(reply.ORD) > d.IRD {
		if int(reply.ORD) > max(maxIRD, d.IRD) {
			return d, fmt.Errorf("%w: responder ORD %d exceeds this end's IRD %d (RFC 6581 §9.1)", iwarp.ErrInsufficientIRD, reply.ORD, max(maxIRD, d.IRD))
		}
		d.IRD = int(reply.ORD)
	}
	return d, nil
}

// NegotiateRTR applies RFC 6581 §9.2 at the initiator: the responder must
// echo the connection model (flag A), and with the peer-to-peer model at
// least one iwarp.RTR option must be common to both words. It returns the options
// in common (0 for the client-server model) or an error wrapping
// iwarp.ErrNoMatchingRTR, for which the initiator sends a Terminate with
// [iwarp.TermTable].NoMatchingRTR.
func NegotiateRTR(req, reply iwarp.IRDORD) (iwarp.RTR, error) {
	switch {
	case reply.PeerToPeer != req.PeerToPeer:
		return 0, fmt.Errorf("%w: request A=%t, reply A=%t (RFC 6581 §9.2)", iwarp.ErrNoMatchingRTR, req.PeerToPeer, reply.PeerToPeer)
	case !req.PeerToPeer:
		return 0, nil
	}
	common := reply.RTR & req.RTR & iwarp.RTRAll
	if common == 0 {
		return 0, fmt.Errorf("%w: responder supports iwarp.RTR %v, this end %v (RFC 6581 §9.2)", iwarp.ErrNoMatchingRTR, reply.RTR, req.RTR)
	}
	return common, nil
}

// clampDepths brings d into the 14-bit range: negative values become 0,
// values beyond 14 bits the largest negotiable depth (iwarp.MaxIRD), so that
// only an explicit iwarp.NoNegotiation means "not negotiated".
func clampDepths(d iwarp.Depths) iwarp.Depths {
	c := func(v int) int {
		if v > iwarp.NoNegotiation {
			return iwarp.MaxIRD
		}
		return max(v, 0)
	}
	return iwarp.Depths{IRD: c(d.IRD), ORD: c(d.ORD)}
}
