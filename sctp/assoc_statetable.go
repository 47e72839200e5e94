package sctp

import (
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// The receive side's dispatch: what each chunk type does in each state of
// the association (RFC 9260 §4), in one table (the layout of Linux's
// sm_statetable.c). Each handler is named by the section whose rule it
// applies; an empty entry discards the chunk and the packet goes on. A
// chunk type outside the table follows its type's action bits (§3.2).
// The checks that come before any chunk (CRC32c, the Verification Tag
// and its §8.5.1 exceptions, a bundled INIT) are receiveLocked's.

// rxVerdict is what a handler tells the packet loop.
type rxVerdict uint8

const (
	// rxStop: the rest of the packet is discarded.
	rxStop rxVerdict = 1 << iota
	// rxData: a DATA chunk was taken (the packet ends with the
	// receive tracker's per-packet rules: a SACK due, §6.2).
	rxData
	// rxRefs: a message queued for delivery points into the packet.
	rxRefs
	// rxShutdownAgain: DATA in SHUTDOWN-SENT; the packet ends with a
	// SACK, the SHUTDOWN again and T2 restarted (§9.2).
	rxShutdownAgain
)

// rxHandler handles one chunk in one state. mu is held.
type rxHandler func(a *Association, c wire.Chunk, now time.Time) rxVerdict

const (
	numStates = int(stateShutdownAckSent) + 1
	// rxReconfigRow is RE-CONFIG's row, after the types of RFC 9260.
	rxReconfigRow = int(wire.ChunkShutdownComplete) + 1
)

// rxRow returns the table row of chunk type t, -1 for a type outside it.
func rxRow(t wire.ChunkType) int {
	switch {
	case t <= wire.ChunkShutdownComplete:
		return int(t)
	case t == wire.ChunkReconfig:
		return rxReconfigRow
	}
	return -1
}

// Columns, for the table's rows.
const (
	cw  = stateCookieWait
	ce  = stateCookieEchoed
	est = stateEstablished
	sp  = stateShutdownPending
	ss  = stateShutdownSent
	sr  = stateShutdownReceived
	sas = stateShutdownAckSent
)

// rxTable[row][state] is the handler of a chunk type in a state. The
// CLOSED column is empty: a closed association takes no packet.
var rxTable = [rxReconfigRow + 1][numStates]rxHandler{
	// §6.2: DATA once established and until the peer's SHUTDOWN (§9.2);
	// before the association exists there is no TCB to take it (§5.1).
	wire.ChunkData: {est: sec6_2Data, sp: sec6_2Data, ss: sec9_2DataInShutdownSent},
	// §5.2.1 collision, §5.2.2 unexpected INIT, §9.2 in SHUTDOWN-ACK-SENT.
	wire.ChunkInit: {cw: sec5_2_1Init, ce: sec5_2_1Init, est: sec5_2_2Init, sp: sec5_2_2Init,
		ss: sec5_2_2Init, sr: sec5_2_2Init, sas: sec9_2InitInShutdownAckSent},
	// §5.1 step C; elsewhere discarded (§5.2.3).
	wire.ChunkInitAck: {cw: sec5_1InitAck},
	wire.ChunkSACK:    {est: sec6_2_1SACK, sp: sec6_2_1SACK, ss: sec6_2_1SACK, sr: sec6_2_1SACK, sas: sec6_2_1SACK},
	wire.ChunkHeartbeat: {ce: sec8_3Heartbeat, est: sec8_3Heartbeat, sp: sec8_3Heartbeat, ss: sec8_3Heartbeat,
		sr: sec8_3Heartbeat, sas: sec8_3Heartbeat},
	wire.ChunkHeartbeatAck: {est: sec8_3HeartbeatAck, sp: sec8_3HeartbeatAck, ss: sec8_3HeartbeatAck,
		sr: sec8_3HeartbeatAck, sas: sec8_3HeartbeatAck},
	// §9.1: in every state (its tag was checked, §8.5.1 B).
	wire.ChunkAbort: {cw: sec9_1Abort, ce: sec9_1Abort, est: sec9_1Abort, sp: sec9_1Abort, ss: sec9_1Abort, sr: sec9_1Abort, sas: sec9_1Abort},
	// §9.2: SHUTDOWN moves to SHUTDOWN-RECEIVED; in SHUTDOWN-SENT both
	// ends sent one; in SHUTDOWN-RECEIVED a retransmission.
	wire.ChunkShutdown: {est: sec9_2Shutdown, sp: sec9_2Shutdown, ss: sec9_2ShutdownInShutdownSent, sr: sec9_2ShutdownAgain},
	// §9.2; in COOKIE-WAIT and COOKIE-ECHOED it is out of the blue
	// (§8.5.1 E), answered before the tag check (receiveLocked).
	wire.ChunkShutdownAck: {ss: sec9_2ShutdownAck, sas: sec9_2ShutdownAck},
	// §5.2.6: a Stale Cookie in COOKIE-ECHOED; other causes are only
	// counted (BadChunks for a malformed one).
	wire.ChunkError: {ce: sec5_2_6Error},
	// §5.2.4: cases B and D while starting, D (a lost COOKIE ACK) after.
	wire.ChunkCookieEcho: {cw: sec5_2_4CookieEchoStarting, ce: sec5_2_4CookieEchoStarting,
		est: sec5_2_4CookieEchoEstablished, sp: sec5_2_4CookieEchoEstablished, ss: sec5_2_4CookieEchoEstablished,
		sr: sec5_2_4CookieEchoEstablished, sas: sec5_2_4CookieEchoEstablished},
	wire.ChunkCookieAck: {ce: sec5_1CookieAck},
	// ECN is not offered (Appendix A): the types' action bits apply.
	wire.ChunkECNE:             {cw: sec3_2Unknown, ce: sec3_2Unknown, est: sec3_2Unknown, sp: sec3_2Unknown, ss: sec3_2Unknown, sr: sec3_2Unknown, sas: sec3_2Unknown},
	wire.ChunkCWR:              {cw: sec3_2Unknown, ce: sec3_2Unknown, est: sec3_2Unknown, sp: sec3_2Unknown, ss: sec3_2Unknown, sr: sec3_2Unknown, sas: sec3_2Unknown},
	wire.ChunkShutdownComplete: {sas: sec9_2ShutdownComplete},
	// RFC 6525 §5.2, once there is a TCB.
	rxReconfigRow: {est: rfc6525Sec5_2Reconfig, sp: rfc6525Sec5_2Reconfig, ss: rfc6525Sec5_2Reconfig,
		sr: rfc6525Sec5_2Reconfig, sas: rfc6525Sec5_2Reconfig},
}

// dispatch runs the handler of chunk c in the current state. mu is held.
func (a *Association) dispatch(c wire.Chunk, now time.Time) rxVerdict {
	row := rxRow(c.Type)
	if row < 0 {
		return sec3_2Unknown(a, c, now)
	}
	if h := rxTable[row][a.state]; h != nil {
		return h(a, c, now)
	}
	a.stats.discarded++
	return 0
}

func sec6_2Data(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	if a.handleData(c, now) {
		return rxData | rxRefs
	}
	return rxData
}

func sec9_2DataInShutdownSent(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	// Taken as in ESTABLISHED, and answered at once with a SACK and the
	// SHUTDOWN again once the packet is processed (rxShutdownAgain).
	return sec6_2Data(a, c, now) | rxShutdownAgain
}

func sec5_2_1Init(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	if in, err := wire.ParseInit(c); err == nil {
		// Both sides sent INIT: an INIT ACK with our original tag and
		// TSN; our own INIT stays outstanding.
		a.collisionInitAck(&in, now)
	}
	return rxStop // §6.10: an INIT is alone in its packet
}

func sec5_2_2Init(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	if in, err := wire.ParseInit(c); err == nil {
		a.answerUnexpectedInit(&in, now)
	}
	return rxStop
}

func sec9_2InitInShutdownAckSent(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	// The INIT is discarded and the SHUTDOWN ACK sent again (the peer
	// may have lost it, and restarted).
	a.ctrl = wire.ShutdownAck{}.Append(a.ctrl)
	return rxStop
}

func sec5_1InitAck(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.handleInitAck(c, now)
	return 0
}

func sec6_2_1SACK(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.handleSACK(c, now)
	return 0
}

func sec8_3Heartbeat(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.handleHeartbeat(c)
	return 0
}

func sec8_3HeartbeatAck(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.handleHeartbeatAck(c, now)
	return 0
}

func sec9_1Abort(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	ab, _ := wire.ParseAbort(c)
	a.terminate(&AbortError{Reason: describeCauses(ab.Causes)})
	return rxStop
}

func sec9_2Shutdown(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	if cum, ok := a.shutdownCumAck(c); ok {
		// No T5 here: it guards the sender of SHUTDOWN; in
		// SHUTDOWN-ACK-SENT T2 and Association.Max.Retrans bound the wait.
		a.state = stateShutdownReceived
		a.wakeAllWriters()
		a.takeShutdown(cum, now)
	}
	return 0
}

func sec9_2ShutdownInShutdownSent(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	if cum, ok := a.shutdownCumAck(c); ok {
		// Both ends sent SHUTDOWN: answered with SHUTDOWN ACK.
		a.io.timers.Stop(timerT2Shutdown)
		a.io.timers.Stop(timerT5ShutdownGuard)
		a.state = stateShutdownReceived
		a.takeShutdown(cum, now)
	}
	return 0
}

func sec9_2ShutdownAgain(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	if cum, ok := a.shutdownCumAck(c); ok {
		a.takeShutdown(cum, now)
	}
	return 0
}

func sec9_2ShutdownAck(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.handleShutdownAck(now)
	return rxStop
}

func sec9_2ShutdownComplete(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.terminate(nil)
	return rxStop
}

func sec5_2_6Error(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.handleError(c, now)
	return 0
}

func sec5_2_4CookieEchoStarting(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.cookieEchoStarting(c, now)
	return 0
}

func sec5_2_4CookieEchoEstablished(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.cookieEchoEstablished(c)
	return 0
}

func sec5_1CookieAck(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.establish(now) // stops T1-cookie
	return 0
}

func sec3_2Unknown(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	if !a.unknownChunk(c) {
		return rxStop // the rest of the packet is discarded
	}
	return 0
}

func rfc6525Sec5_2Reconfig(a *Association, c wire.Chunk, now time.Time) rxVerdict {
	a.handleReconfig(c)
	return 0
}
