package sctpllp

// The DDP Stream Session state machine of RFC 5043 §6 and RFC 6581 §7,
// written as a pure transition function over the received chunks taken in
// DDP-SSN order (RFC 5043 §6.1: "The normative sequence for considering
// Payload Data Chunks within a given session is based upon each Data
// Chunk's DDP-SSN"). The local actions (Open, Accept, Reject, Close, Abort)
// change the state in session.go.

// sessState is the state of one DDP Stream Session.
type sessState uint32

const (
	// ssIdle: no chunk processed yet (passive session before its Initiate).
	ssIdle sessState = iota
	// ssInitSent: active side, Initiate sent, waiting for the reply.
	ssInitSent
	// ssInitReceived: passive side, Initiate received, ULP deciding
	// (RFC 5043 §6.4: a finite number may be pending).
	ssInitReceived
	// ssEstablished: Accept sent (passive) or received (active); DDP
	// segments flow both ways (RFC 5043 §6.2).
	ssEstablished
	// ssLocalClosed: we sent our Terminate; the peer's segments are still
	// delivered until its Terminate (RFC 5043 §6.2: the final chunk of each
	// side MAY be a Terminate).
	ssLocalClosed
	// ssDone: the session is over (rejected, terminated, aborted,
	// violated); received chunks are dropped.
	ssDone
)

func (s sessState) String() string {
	switch s {
	case ssIdle:
		return "idle"
	case ssInitSent:
		return "initiate-sent"
	case ssInitReceived:
		return "initiate-received"
	case ssEstablished:
		return "established"
	case ssLocalClosed:
		return "local-closed"
	case ssDone:
		return "done"
	}
	return "invalid"
}

// rxEvent classifies a received chunk.
type rxEvent uint8

const (
	evSegment rxEvent = iota // PPID 16
	evInitiate
	evAccept
	evReject
	evTerminate
)

func eventOf(f FunctionCode) rxEvent {
	switch f.base() {
	case FuncInitiate:
		return evInitiate
	case FuncAccept:
		return evAccept
	case FuncReject:
		return evReject
	}
	return evTerminate
}

// rxAction is what the session does with a chunk.
type rxAction uint8

const (
	// actViolation: the chunk fits no legal sequence (RFC 5043 §6.1): the
	// session is terminated.
	actViolation rxAction = iota
	// actNewSession: Initiate on an idle stream (RFC 5043 §6.2–§6.4).
	actNewSession
	// actEstablish: the active side received the Accept (§6.2).
	actEstablish
	// actRejected: the active side received a Reject (§6.3).
	actRejected
	// actNonULPRejected: the active side received a Terminate in reply to
	// its Initiate (§6.4).
	actNonULPRejected
	// actWithdrawn: the passive side received a Terminate before it
	// decided: the initiator withdrew its request.
	actWithdrawn
	// actDeliver: a DDP segment of the session.
	actDeliver
	// actPeerTerminate: the peer ended an established session (§6.2).
	actPeerTerminate
	// actPeerFinal: the peer's Terminate after ours (§6.2).
	actPeerFinal
	// actDrop: the session is over; the chunk is ignored.
	actDrop
)

// transition returns the next state and the action for a chunk of kind ev
// received in state st. enhanced tells whether the session was set up with
// the RFC 6581 codes and evEnhanced whether the chunk uses one; a reply
// whose flavour differs from the request is a violation (RFC 6581 §10: an
// enhanced request is answered by an enhanced reply, an unenhanced one by
// an unenhanced reply). The Terminate has a single code for both flavours
// (RFC 6581 §7).
func transition(st sessState, ev rxEvent, enhanced, evEnhanced bool) (sessState, rxAction) {
	flavourOK := ev == evSegment || ev == evTerminate || enhanced == evEnhanced
	switch st {
	case ssIdle:
		if ev == evInitiate {
			return ssInitReceived, actNewSession
		}
	case ssInitSent:
		switch {
		case ev == evAccept && flavourOK:
			return ssEstablished, actEstablish
		case ev == evReject && flavourOK:
			return ssDone, actRejected
		case ev == evTerminate:
			return ssDone, actNonULPRejected
		}
	case ssInitReceived:
		switch ev {
		case evSegment:
			// RFC 5043 §6.6: the active side may send segments once
			// the Initiate is acknowledged, before the Accept; they
			// are held until the ULP accepts.
			return ssInitReceived, actDeliver
		case evTerminate:
			return ssDone, actWithdrawn
		}
	case ssEstablished:
		switch ev {
		case evSegment:
			return ssEstablished, actDeliver
		case evTerminate:
			return ssDone, actPeerTerminate
		}
	case ssLocalClosed:
		switch ev {
		case evSegment:
			return ssLocalClosed, actDeliver
		case evTerminate:
			return ssDone, actPeerFinal
		}
	case ssDone:
		return ssDone, actDrop
	}
	return ssDone, actViolation
}
