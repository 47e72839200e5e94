// Package sessionsm is the DDP Stream Session state machine of package
// sctpllp (RFC 5043 §6, RFC 6581 §7), a pure transition function over the
// received chunks taken in DDP-SSN order (RFC 5043 §6.1). The local
// actions (Open, Accept, Reject, Close, Abort) change the state in
// sctpllp's session.go.
package sessionsm

// State is the state of one DDP Stream Session.
type State uint32

const (
	// Idle: no chunk processed yet (passive session before its Initiate).
	Idle State = iota
	// InitSent: active side, Initiate sent, waiting for the reply.
	InitSent
	// InitReceived: passive side, Initiate received, ULP deciding
	// (RFC 5043 §6.4: a finite number may be pending).
	InitReceived
	// Established: Accept sent (passive) or received (active); DDP
	// segments flow both ways (RFC 5043 §6.2).
	Established
	// LocalClosed: we sent our Terminate; the peer's segments are still
	// delivered until its Terminate (RFC 5043 §6.2: the final chunk of each
	// side MAY be a Terminate).
	LocalClosed
	// Done: the session is over (rejected, terminated, aborted,
	// violated); received chunks are dropped.
	Done
)

func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case InitSent:
		return "initiate-sent"
	case InitReceived:
		return "initiate-received"
	case Established:
		return "established"
	case LocalClosed:
		return "local-closed"
	case Done:
		return "done"
	}
	return "invalid"
}

// Event classifies a received chunk.
type Event uint8

const (
	EvSegment Event = iota // PPID 16
	EvInitiate
	EvAccept
	EvReject
	EvTerminate
)

// Action is what the session does with a chunk.
type Action uint8

const (
	// ActViolation: the chunk fits no legal sequence (RFC 5043 §6.1): the
	// session is terminated.
	ActViolation Action = iota
	// ActNewSession: Initiate on an idle stream (RFC 5043 §6.2–§6.4).
	ActNewSession
	// ActEstablish: the active side received the Accept (§6.2).
	ActEstablish
	// ActRejected: the active side received a Reject (§6.3).
	ActRejected
	// ActNonULPRejected: the active side received a Terminate in reply to
	// its Initiate (§6.4).
	ActNonULPRejected
	// ActWithdrawn: the passive side received a Terminate before it
	// decided: the initiator withdrew its request.
	ActWithdrawn
	// ActDeliver: a DDP segment of the session.
	ActDeliver
	// ActPeerTerminate: the peer ended an established session (§6.2).
	ActPeerTerminate
	// ActPeerFinal: the peer's Terminate after ours (§6.2).
	ActPeerFinal
	// ActDrop: the session is over; the chunk is ignored.
	ActDrop
)

// Transition returns the next state and the action for a chunk of kind ev
// received in state st. enhanced tells whether the session was set up with
// the RFC 6581 codes and evEnhanced whether the chunk uses one; a reply
// whose flavour differs from the request is a violation (RFC 6581 §10: an
// enhanced request is answered by an enhanced reply, an unenhanced one by
// an unenhanced reply). The Terminate has a single code for both flavours
// (RFC 6581 §7).
func Transition(st State, ev Event, enhanced, evEnhanced bool) (State, Action) {
	flavourOK := ev == EvSegment || ev == EvTerminate || enhanced == evEnhanced
	switch st {
	case Idle:
		if ev == EvInitiate {
			return InitReceived, ActNewSession
		}
	case InitSent:
		switch {
		case ev == EvAccept && flavourOK:
			return Established, ActEstablish
		case ev == EvReject && flavourOK:
			return Done, ActRejected
		case ev == EvTerminate:
			return Done, ActNonULPRejected
		}
	case InitReceived:
		switch ev {
		case EvSegment:
			// RFC 5043 §6.6: the active side may send segments once
			// the Initiate is acknowledged, before the Accept; they
			// are held until the ULP accepts.
			return InitReceived, ActDeliver
		case EvTerminate:
			return Done, ActWithdrawn
		}
	case Established:
		switch ev {
		case EvSegment:
			return Established, ActDeliver
		case EvTerminate:
			return Done, ActPeerTerminate
		}
	case LocalClosed:
		switch ev {
		case EvSegment:
			return LocalClosed, ActDeliver
		case EvTerminate:
			return Done, ActPeerFinal
		}
	case Done:
		return Done, ActDrop
	}
	return Done, ActViolation
}
