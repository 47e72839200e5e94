package sctp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/pathmgr"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/seq"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/tracing"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// receive processes one packet from the peer, held in the pooled buffer
// bp (nil if the caller keeps the buffer). It reports whether bp now
// belongs to the association (queued for delivery). A packet with a bad
// checksum or a foreign Verification Tag is dropped (RFC 9260 §6.8, §8.5).
func (a *Association) receive(b []byte, bp *[]byte) bool {
	if !a.checksumOK(b) {
		return false
	}
	now := time.Now()
	a.mu.Lock()
	a.setRxPacket(bp)
	a.rxPktCharged = false
	kept := a.receiveLocked(b, bp, now)
	a.mu.Unlock()
	return kept
}

// checksumOK reports whether packet b passes RFC 9260 §6.8's check: its
// CRC32c, or a zero checksum where the association announced RFC 9653's
// Zero Checksum Acceptable (§5.3: either is taken).
func (a *Association) checksumOK(b []byte) bool {
	return wire.ChecksumOK(b) || a.cfg.ZeroChecksum && wire.ZeroChecksumOK(b)
}

// setRxPacket records the buffer of the packet about to be received
// (nil: borrowed, every message is copied out of it).
func (a *Association) setRxPacket(bp *[]byte) {
	a.rxBorrowed, a.rxDense, a.rxPktCap = bp == nil, false, 0
	if bp != nil {
		a.rxPktCap = cap(*bp)
	}
}

// receiveSegments takes the packets of one read that the kernel coalesced
// (UDP_GRO): b, in the pooled buffer bp (nil: borrowed), holds packets of
// seg octets, the last possibly shorter. Each is received as if read
// alone; their messages reach the delivery goroutine together, delivered
// from bp if the read fills half of it (copied otherwise), and what they
// trigger is sent once, after the last: one SACK per read, as Linux TCP
// acknowledges a coalesced segment (RFC 9260 §6.2). flush false waits for
// the next read, queued already. It reports whether bp is now kept.
func (a *Association) receiveSegments(b []byte, bp *[]byte, seg int, flush bool) bool {
	// Checksums first, outside the lock (a read has at most 64 packets;
	// any beyond are checked in the loop).
	var bad uint64
	for i, off := 0, 0; off < len(b) && i < 64; i, off = i+1, off+seg {
		if !a.checksumOK(b[off:min(off+seg, len(b))]) {
			bad |= 1 << i
		}
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.io.rxRun, a.io.runRefs = true, false
	a.setRxPacket(bp)
	a.rxDense = bp != nil && 4*len(b) >= 3*cap(*bp)
	a.rxPktCharged = false
	for i, off := 0, 0; off < len(b); i, off = i+1, off+seg {
		p := b[off:min(off+seg, len(b))]
		if (i < 64 && bad&(1<<i) != 0) || (i >= 64 && !a.checksumOK(p)) {
			continue
		}
		a.receiveLocked(p, bp, now)
	}
	a.io.rxRun = false
	a.rxDense = false
	a.stats.offloadRecv++
	kept := a.dq.commit(bp, a.io.runRefs)
	switch {
	case a.state == stateClosed:
	case flush || len(a.ctrl) > 0:
		a.transmit(now)
	default:
		a.armDelayedAck()
		a.arm(now)
	}
	return kept
}

// receiveLocked is receive with mu held.
func (a *Association) receiveLocked(b []byte, bp *[]byte, now time.Time) bool {
	if a.state == stateClosed {
		return false
	}
	pkt, err := wire.ParsePacketNoChecksum(b)
	if err != nil {
		a.stats.badChunks++
		return false
	}
	if bundlesInit(pkt.ChunkBytes()) {
		// §8.5.1 A, §6.10: an INIT is alone in its packet; a packet that
		// bundles one with other chunks is discarded whole, whatever its tag.
		a.stats.badChunks++
		return false
	}
	if len(b) > wire.HeaderLen && wire.ChunkType(b[wire.HeaderLen]) == wire.ChunkShutdownAck &&
		(a.state == stateCookieWait || a.state == stateCookieEchoed) {
		// §8.5.1 E: a SHUTDOWN ACK before the association exists is out
		// of the blue (§8.4 rule 5): SHUTDOWN COMPLETE with the T bit and
		// the packet's own tag.
		a.ootbShutdownComplete(pkt.Header)
		return false
	}
	if !a.tagOK(b) {
		if len(b) > wire.HeaderLen && wire.ChunkType(b[wire.HeaderLen]) == wire.ChunkCookieEcho && a.tcb.peerTag != 0 {
			// §8.5.1 D: a COOKIE ECHO follows §5.2.4 whatever its tag;
			// the chunks bundled after it belong to the association its
			// cookie makes, not to this one.
			a.foreignCookieEcho(pkt, now)
			return false
		}
		a.stats.badTag++
		return false
	}
	a.stats.packetsRecv++
	a.io.refused = 0
	if a.cfg.Tap != nil {
		a.tap(false, a.tapRemote(false), b)
	}
	return a.receiveChunks(pkt.ChunkBytes(), bp, now)
}

// bundlesInit reports whether chunks, the chunks of one packet, hold an
// INIT among others (RFC 9260 §6.10: an INIT is never bundled).
func bundlesInit(chunks []byte) bool {
	it := wire.NewChunkIter(chunks)
	n, init := 0, false
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		n++
		init = init || c.Type == wire.ChunkInit
		if init && n > 1 {
			return true
		}
	}
	return false
}

// ootbShutdownComplete answers an out-of-the-blue SHUTDOWN ACK with a
// SHUTDOWN COMPLETE with the T bit and the SHUTDOWN ACK's tag (RFC 9260
// §8.4 rule 5). mu is held.
func (a *Association) ootbShutdownComplete(h wire.Header) {
	p := wire.AppendHeader(a.io.pkt[:0], wire.Header{SrcPort: a.tcb.localPort, DstPort: a.tcb.peerPort, VerificationTag: h.VerificationTag})
	p = wire.ShutdownComplete{T: true}.Append(p)
	wire.SetChecksum(p)
	a.sendPacket(p)
	a.io.pkt = append(p[:0], a.io.hdr[:]...)
}

// tagOK checks the Verification Tag (RFC 9260 §8.5, §8.5.1). In
// COOKIE-WAIT the peer's tag is not known yet: an INIT ACK carries ours,
// an ABORT with the T bit carries whatever our INIT had (zero).
func (a *Association) tagOK(b []byte) bool {
	tag := binary.BigEndian.Uint32(b[4:8])
	if len(b) < wire.HeaderLen+4 {
		return false
	}
	typ, flags := wire.ChunkType(b[wire.HeaderLen]), b[wire.HeaderLen+1]
	if (typ == wire.ChunkAbort || typ == wire.ChunkShutdownComplete) && flags&wire.FlagT != 0 {
		// §8.5.1 B, C: with the T bit the tag is the peer's own, and only
		// that; our tag with the T bit set is discarded.
		return tag == a.tcb.peerTag && a.tcb.peerTag != 0
	}
	if tag == a.tcb.localTag {
		return true
	}
	return typ == wire.ChunkInit && tag == 0 // §8.5.1 A: the state table answers it
}

// receiveChunks processes the chunks of one packet. mu is held.
func (a *Association) receiveChunks(chunks []byte, bp *[]byte, now time.Time) bool {
	it := wire.NewChunkIter(chunks)
	var all rxVerdict
	for c, ok := it.Next(); ok && a.state != stateClosed; c, ok = it.Next() {
		v := a.dispatch(c, now) // assoc_statetable.go
		all |= v
		if v&rxStop != 0 {
			goto done
		}
	}
	if it.Err() != nil {
		a.stats.badChunks++
	}
done:
	if a.state == stateClosed {
		if !a.io.rxRun {
			a.dq.commit(nil, false)
		}
		return false
	}
	kept := false
	if !a.io.rxRun { // receiveSegments queues the read's messages
		kept = a.dq.commit(bp, all&rxRefs != 0)
	} else if all&rxRefs != 0 {
		a.io.runRefs = true
	}
	if a.reconf.pending != nil {
		a.performPendingReset()
	}
	if all&rxData != 0 {
		a.rt.EndPacket(now)
		if all&rxShutdownAgain != 0 && a.state == stateShutdownSent {
			// §9.2: DATA in SHUTDOWN-SENT is answered at once with a SACK
			// and the SHUTDOWN again, and T2 restarts.
			a.ctrl = a.appendSACK(a.ctrl)
			a.ctrl = (&wire.Shutdown{CumTSNAck: a.rt.CumTSN()}).Append(a.ctrl)
			a.io.timers.SetAfter(timerT2Shutdown, now, a.primaryPath().rto.RTO())
		}
	}
	if !a.io.rxRun {
		a.transmit(now)
	}
	return kept
}

// unknownChunk applies the action bits of an unrecognized chunk type
// (RFC 9260 §3.2) and reports whether to go on with the packet.
func (a *Association) unknownChunk(c wire.Chunk) bool {
	act := c.Type.Action()
	if act.Report() && a.tcb.peerTag != 0 {
		cause := wire.AppendCauseUnrecognizedChunk(nil, c)
		a.ctrl = (&wire.ErrorChunk{Causes: cause}).Append(a.ctrl)
	}
	return act.Skip()
}

// handleData takes one DATA chunk (RFC 9260 §6.2, §6.5, §6.9). It reports
// whether a message queued for delivery points into the packet.
// The state table takes DATA only where §6.2 and §9.2 allow it.
func (a *Association) handleData(c wire.Chunk, now time.Time) bool {
	d, err := wire.ParseData(c)
	if err != nil {
		a.stats.badChunks++
		if errors.Is(err, wire.ErrNoUserData) && len(c.Value) >= 4 {
			// §6.2: a DATA chunk without user data aborts the association.
			tsn := binary.BigEndian.Uint32(c.Value)
			a.abortLocked(wire.AppendCauseNoUserData(nil, tsn),
				&AbortError{Local: true, Reason: "DATA chunk without user data", Cause: ErrProtocolViolation})
		}
		return false
	}
	a.stats.dataRecv++
	if !d.Unordered && a.cfg.UnorderedOnly {
		const why = "ordered DATA on an association that takes only unordered messages (RFC 5043 §10)"
		a.abortLocked(wire.AppendCause(nil, wire.CauseProtocolViolation, []byte(why)),
			&AbortError{Local: true, Reason: why, Cause: ErrProtocolViolation})
		return false
	}
	if a.rt.Received(d.TSN) {
		a.rt.Observe(d.TSN)
		a.stats.dupTSNs++
		return false
	}
	n := len(d.UserData)
	e := a.dq.begin()
	// The memory it takes, charged before it is acknowledged: a message
	// delivered at once is copied into a buffer of its size, or delivered
	// from the packet's buffer (charged once per packet); a held one is
	// charged by Admit.
	held := a.rs.Holds(&d)
	copied := !held && (a.rxBorrowed || n < copyBelow && !a.rxDense)
	charge := 0
	switch {
	case copied:
		charge = rxClass(n) + msgOverhead
	case !held && !a.rxPktCharged:
		charge = a.rxPktCap // what commit adds to rxQueued and delivery releases
	}
	inSeq := d.TSN == a.rt.CumTSN()+1
	switch {
	case e == nil,
		a.freeShare() < int64(max(charge, a.rs.Cost(&d))) && !inSeq,
		charge > 0 && a.rxAcct.Charge(charge) != nil:
		a.dropData()
		return false
	case held && !a.rs.Admit(&d, a.rejectHeld):
		if inSeq && a.rs.Held()+a.rs.Cost(&d) > int(a.rxAcct.Limit()) {
			// Nothing but reassembly holds the share, and nothing above
			// this TSN could be evicted: what is held can never complete.
			why := fmt.Sprintf("reassembly needs more than the receive buffer of %d octets (RFC 9260 §6.9)", a.cfg.ReceiveBuffer)
			a.abortLocked(wire.AppendCause(nil, wire.CauseProtocolViolation, []byte(why)),
				&AbortError{Local: true, Reason: why, Cause: errReassemblyLimit})
			return false
		}
		a.dropData()
		return false
	}
	if held {
		a.noteRxCost(a.rs.Cost(&d), n)
	} else {
		a.noteRxCost(charge, n)
	}
	if a.rt.Observe(d.TSN) != recvNew {
		a.releaseReceive(charge)
		a.rs.dropReservation()
		return false
	}
	if d.Immediate {
		a.rt.RequestImmediate()
	}
	now2, err := a.rs.Push(&d)
	if err != nil { // errors.Is only then: it is a call per message otherwise
		a.releaseReceive(charge)
		if errors.Is(err, errInvalidStream) {
			// §6.5: acknowledged, discarded, and reported.
			a.stats.invalidStream++
			a.ctrl = (&wire.ErrorChunk{Causes: wire.AppendCauseInvalidStream(nil, d.StreamID)}).Append(a.ctrl)
			return false
		}
		if errors.Is(err, errReassemblyBudget) {
			// The process-wide budget filled since Admit: dropped.
			a.rt.Renege(d.TSN)
			a.dropData()
			return false
		}
		why, cause := err.Error(), error(ErrProtocolViolation)
		if w := a.rs.Why(); w != "" && (errors.Is(err, errFragmentSequence) || errors.Is(err, errReassemblyLimit)) {
			why = w
		}
		switch {
		case errors.Is(err, errReassemblyLimit):
			cause = errReassemblyLimit
		case errors.Is(err, errFragmentSequence), errors.Is(err, errStreamSequence):
			cause = fmt.Errorf("%w: %w", ErrProtocolViolation, err)
		}
		a.abortLocked(wire.AppendCause(nil, wire.CauseProtocolViolation, []byte(why)),
			&AbortError{Local: true, Reason: why, Cause: cause})
		return false
	}
	refs := false
	if !now2 {
		a.releaseReceive(charge) // held by the Reassembler, charged by Admit
	} else {
		m := rxMsg{sid: d.StreamID, ppid: d.PPID, data: d.UserData}
		if copied {
			// A small message is copied into a buffer of its size, so
			// that the packet buffer is not held for it.
			m.buf = getRxBuf(n)
			m.data = append((*m.buf)[:0], d.UserData...)
			m.cost = charge
			a.rxQueued += m.cost
		} else {
			refs = true // the packet buffer, charged once (commit queues it)
			a.rxPktCharged = true
		}
		e.msgs = append(e.msgs, m)
		a.stats.userMsgsRecv++
	}
	for m, ok := a.rs.nextHeld(); ok; m, ok = a.rs.nextHeld() {
		e.msgs = append(e.msgs, rxMsg{sid: m.StreamID, ppid: m.PPID, data: m.Data, buf: m.buf, cost: m.cost})
		a.rxQueued += m.cost
		a.stats.userMsgsRecv++
	}
	return refs
}

// dropData drops a new DATA chunk unacknowledged for lack of room (RFC
// 9260 §6.2); the packet's SACK goes at once, with the current window.
func (a *Association) dropData() {
	a.stats.rxDropped++
	a.rt.DropNoRoom()
}

// rejectHeld is the Reassembler's renege hook (§6.2 zero window).
func (a *Association) rejectHeld(tsn uint32) { a.rt.Renege(tsn) }

// handleSACK applies a SACK (RFC 9260 §6.2.1, §6.3.2, §7.2). mu is held.
func (a *Association) handleSACK(c wire.Chunk, now time.Time) {
	s, err := wire.ParseSACK(c, a.rxGaps[:0], a.rxDups[:0])
	if err != nil {
		a.stats.badChunks++
		return
	}
	a.rxGaps, a.rxDups = s.Gaps[:0], s.Dups[:0]
	a.stats.sacksRecv++
	a.applyAck(s.CumTSNAck, s.Gaps, s.Dups, s.ARwnd, now)
}

// applyAck applies a Cumulative TSN Ack with its gaps (a SACK, or the
// Cumulative TSN Ack of a SHUTDOWN). mu is held.
func (a *Association) applyAck(cum uint32, gaps []wire.GapAckBlock, dups []uint32, arwnd uint32, now time.Time) {
	dst := a.primaryPath()
	if a.oq == nil {
		return
	}
	oldCum := a.oq.CumTSN()
	_, inFR := dst.cc.InFastRecovery()
	if a.mh != nil {
		clear(a.mh.acked[:])
		a.oq.pathLost, a.oq.pathLive = 0, 0
		a.mh.flightBefore = a.mh.flight[a.mh.cur]
		a.oq.pathFR, inFR = a.mhInFR(), false // per destination
	}
	res := a.oq.OnSACK(cum, gaps, dups, arwnd, inFR, now)
	switch res.Status {
	case sackStale:
		return
	case sackInvalid:
		if seq.TSNGreaterEq(cum, a.oq.NextTSN()) {
			// §6.2.1: acknowledging a TSN never sent; RFC 9260 lets the
			// receiver abort (Linux does, with a Protocol Violation).
			a.abortLocked(wire.AppendCause(nil, wire.CauseProtocolViolation, []byte("SACK of a TSN not sent")),
				&AbortError{Local: true, Reason: "SACK of a TSN not sent", Cause: ErrProtocolViolation})
		}
		a.stats.badChunks++
		return
	}
	freed := false
	for tsn := oldCum + 1; seq.TSNLessEq(tsn, cum); tsn++ {
		i := a.oq.slot(tsn)
		if c := a.sent[i]; c.buf != nil {
			a.sndBuffered -= cap(*c.buf)
			putBuf(c.buf)
			a.sent[i] = txChunk{}
			freed = true
		}
	}
	switch {
	case res.RTTValid && a.mh != nil:
		a.mhRTO(pathmgr.ID(res.RTTPath % pathmgr.DefaultMaxPaths)).Observe(res.RTT)
	case res.RTTValid:
		dst.rto.Observe(res.RTT)
	}
	res.Ack.Now, res.Ack.SRTT = now, dst.rto.SRTT()
	if freed := res.Ack.FlightAcked + res.MarkedBytes; freed > 0 {
		a.burstFreed += freed
		a.burstAt = now
	}
	if a.mh != nil {
		a.mhOnAck(&dst.cc, res.Ack)
	} else {
		dst.cc.OnAck(res.Ack)
	}
	if res.Ack.AckedBytes > 0 {
		a.clearErrors() // §8.1, §8.3: the peer is alive
		if a.mh != nil {
			a.mhAcked(now)
		}
	}
	if res.MarkedBytes > 0 {
		dst.cc.OnRetransmitMarked(res.MarkedBytes)
	}
	if res.FastRetransmit {
		if a.mh != nil {
			if a.mhFastRetransmit(&dst.cc, res.HighestOutstanding) {
				a.stats.fastRetrans++
			}
		} else if dst.cc.OnFastRetransmit(res.HighestOutstanding) {
			a.stats.fastRetrans++
		}
		a.fastRtx = true
		a.stats.lostRetrans += uint64(res.LostRetransmits)
	}
	if a.cfg.Tracer != nil {
		a.traceEvent(tracing.Event{Kind: tracing.EventSACK, CumTSN: cum, Gaps: len(gaps), Dups: len(dups), ARwnd: arwnd,
			Acked: res.Ack.AckedBytes, Marked: res.MarkedBytes, FastRetransmit: res.FastRetransmit}, now)
	}
	switch {
	case a.mh != nil:
		a.mhAckTimers(now) // per destination
	case a.oq.Len() == 0:
		a.io.timers.Stop(timerT3Rtx) // §6.3.2 R2
	case res.Ack.CumAdvanced:
		a.io.timers.SetAfter(timerT3Rtx, now, dst.rto.RTO()) // R3
	case res.Reneged && !a.io.timers.Running(timerT3Rtx):
		a.io.timers.SetAfter(timerT3Rtx, now, dst.rto.RTO())
	}
	// The writers waiting for space are served when a quarter of the
	// buffer is free again (or it is empty), not on every SACK, so that
	// they go ahead in a batch.
	if freed && (a.sndBuffered <= a.cfg.SendBuffer*3/4 || a.oq.Len() == 0) {
		a.grantWriters()
	}
	a.checkShutdown(now)
}

// handleHeartbeat answers a HEARTBEAT with its info (RFC 9260 §8.3).
func (a *Association) handleHeartbeat(c wire.Chunk) {
	hb, err := wire.ParseHeartbeat(c)
	if err != nil || a.tcb.peerTag == 0 {
		a.stats.badChunks++
		return
	}
	ack := wire.Heartbeat{Ack: true, Info: hb.Info}
	if a.mh != nil {
		a.mhHeartbeatReply(&ack) // to the HEARTBEAT's source (§8.3)
		return
	}
	if len(a.ctrl)+ack.Len() > a.maxPacket-wire.HeaderLen {
		// A PLPMTUD probe (RFC 8899 §6.2) may be larger than our packets:
		// its answer goes alone, as large as the probe, and confirms the
		// size in both directions (pmtu.AppendProbePacket), so it is
		// sent with DF set whatever its size.
		p := ack.Append(append(a.io.pkt[:0], a.io.hdr[:]...))
		a.seal(p)
		a.stats.packetsSent++
		if a.cfg.Tap != nil {
			a.tap(true, a.primaryPath().addr, p)
		}
		if err := a.io.out(p); err != nil {
			a.stats.sendErrors++
		}
		a.io.pkt = p[:wire.HeaderLen]
		return
	}
	a.ctrl = ack.Append(a.ctrl)
}

// heartbeatInfoLen: the nonce and the send time.
const heartbeatInfoLen = 16

// handleHeartbeatAck takes the answer to our HEARTBEAT: the peer is alive,
// and the round trip is an RTT measurement (RFC 9260 §8.3).
func (a *Association) handleHeartbeatAck(c wire.Chunk, now time.Time) {
	dst := a.primaryPath()
	if a.plpmtudAck(c, now) {
		return
	}
	if a.mh != nil {
		a.mhHeartbeatAck(c, now)
		return
	}
	hb, err := wire.ParseHeartbeat(c)
	if err != nil || len(hb.Info) != heartbeatInfoLen || binary.BigEndian.Uint64(hb.Info) != dst.hbNonce || !dst.hbPending {
		return
	}
	dst.hbPending = false
	a.clearErrors()
	sent := time.Unix(0, int64(binary.BigEndian.Uint64(hb.Info[8:])))
	if rtt := now.Sub(sent); rtt >= 0 {
		dst.rto.Observe(rtt)
	}
}

// shutdownCumAck parses the peer's SHUTDOWN (RFC 9260 §9.2) and
// reports its Cumulative TSN Ack; a malformed one is counted.
func (a *Association) shutdownCumAck(c wire.Chunk) (uint32, bool) {
	sd, err := wire.ParseShutdown(c)
	if err != nil {
		a.stats.badChunks++
		return 0, false
	}
	return sd.CumTSNAck, true
}

// takeShutdown applies a SHUTDOWN's Cumulative TSN Ack once the state
// table's handler has moved the state (§9.2), and goes on with the
// shutdown if nothing is outstanding. mu is held.
func (a *Association) takeShutdown(cum uint32, now time.Time) {
	a.applyAck(cum, nil, nil, uint32(a.primaryPath().cc.Rwnd()+a.primaryPath().cc.Flight()), now)
	a.checkShutdown(now)
}

// handleShutdownAck completes a shutdown we started, in SHUTDOWN-SENT or
// SHUTDOWN-ACK-SENT (RFC 9260 §9.2).
func (a *Association) handleShutdownAck(now time.Time) {
	a.sendChunks(wire.ShutdownComplete{}.Append(a.ctrl[:0]))
	a.terminate(nil)
}

// checkShutdown moves a shutdown on once everything sent is acknowledged
// (RFC 9260 §9.2). mu is held.
func (a *Association) checkShutdown(now time.Time) {
	if a.pendHead < len(a.pend) || (a.oq != nil && a.oq.Len() > 0) {
		return
	}
	switch a.state {
	case stateShutdownPending:
		a.state = stateShutdownSent
		a.ctrl = (&wire.Shutdown{CumTSNAck: a.rt.CumTSN()}).Append(a.ctrl)
		a.io.timers.SetAfter(timerT2Shutdown, now, a.primaryPath().rto.RTO())
		// §9.2: the sender of SHUTDOWN bounds the whole sequence by
		// T5-shutdown-guard, 5 RTO.Max, from the SHUTDOWN on.
		a.io.timers.SetAfter(timerT5ShutdownGuard, now, 5*a.cfg.RTO.Max)
		a.io.timers.Stop(timerHeartbeat)
		a.clearErrors()
	case stateShutdownReceived:
		a.state = stateShutdownAckSent
		a.ctrl = wire.ShutdownAck{}.Append(a.ctrl)
		a.io.timers.SetAfter(timerT2Shutdown, now, a.primaryPath().rto.RTO())
		a.io.timers.Stop(timerHeartbeat)
		a.clearErrors()
	}
}

// handleError takes an ERROR chunk (RFC 9260 §3.3.10). A Stale Cookie in
// COOKIE-ECHOED restarts the association start (§5.2.6); other causes
// are counted.
func (a *Association) handleError(c wire.Chunk, now time.Time) {
	e, err := wire.ParseError(c)
	if err != nil {
		return
	}
	it := e.CauseIter()
	for cause, ok := it.Next(); ok; cause, ok = it.Next() {
		if cause.Code == wire.CauseStaleCookie { // COOKIE-ECHOED: the state table
			a.staleCookie(cause, now)
			return
		}
	}
}

// staleCookie takes a Stale Cookie ERROR in COOKIE-ECHOED (RFC 9260
// §5.2.6): the start begins again with a new INIT that asks, with a
// Cookie Preservative, for twice the staleness more cookie lifetime (as
// Linux asks). Their number is bounded by Max.Init.Retransmits (§5.1.6),
// so that a peer that always answers so cannot keep the start going for
// ever. mu is held.
func (a *Association) staleCookie(cause wire.Cause, now time.Time) {
	a.io.timers.Stop(timerT1Cookie)
	a.hs.staleRetries++
	if a.hs.staleRetries > a.cfg.MaxInitRetrans {
		a.terminate(&handshakeError{reason: "the peer found every State Cookie stale (RFC 9260 §5.2.6)"})
		return
	}
	us, _ := cause.Staleness()
	in := a.ourInit(false)
	in.Params.CookiePreservative = uint32(min(2*(uint64(us)/1000+1), 1<<31))
	a.hs.initChunk = in.Append(a.hs.initChunk[:0])
	a.sendInit(now)
}

// handleReconfig answers a peer's RE-CONFIG (RFC 6525 §5.2), requests in
// sequence-number order (§5.2.1; the last one again is answered again,
// others "Bad Sequence Number"). An Outgoing SSN Reset (§5.2.2) resets
// our incoming streams' SSNs once every TSN up to the peer's last
// assigned one is in and none of their messages is held; until then the
// answer is "In progress" (pendingReset). An Incoming SSN Reset (§5.2.3)
// is answered with our own Outgoing one (our messages are unordered, SSN
// 0). Adding streams and SSN/TSN resets are denied (§5.2.4-§5.2.6). Only
// with a TCB (the state table). mu is held.
func (a *Association) handleReconfig(c wire.Chunk) {
	var rs [2]wire.ReconfigResponse
	n := 0
	err := wire.ParseReconfig(c, func(r wire.ReconfigRequest) {
		if resp, ok := a.reconfigRequest(r); ok && n < len(rs) {
			rs[n] = resp
			n++
		}
	}, func(r wire.ReconfigResponse) {
		// The answer to our Outgoing SSN Reset Request (§5.2.7): done,
		// unless the peer defers it (it retransmits its Incoming
		// request meanwhile, and gets ours again).
		if len(a.reconf.outReq) > 0 && r.SeqNum == a.reconf.outSeq-1 && r.Result != wire.ReconfigInProgress {
			a.reconf.outReq = a.reconf.outReq[:0:0]
		}
	})
	if err != nil {
		a.stats.badChunks++
	}
	if n > 0 {
		a.ctrl = wire.AppendReconfigResponses(a.ctrl, rs[:n]...)
	}
}

// reconfigRequest processes one RE-CONFIG request and returns its
// response; ok is false where the answer is our own request instead
// (§5.2.3). mu is held.
func (a *Association) reconfigRequest(r wire.ReconfigRequest) (resp wire.ReconfigResponse, ok bool) {
	resp = wire.ReconfigResponse{SeqNum: r.SeqNum}
	switch {
	case a.reconf.answered && r.SeqNum == a.reconf.peerSeq-1:
		// §5.2.1: a retransmission: the same answer.
		if a.reconf.lastOut && len(a.reconf.outReq) > 0 {
			a.ctrl = append(a.ctrl, a.reconf.outReq...)
			return resp, false
		}
		resp.Result = a.reconf.last
		return resp, true
	case r.SeqNum != a.reconf.peerSeq:
		resp.Result = wire.ReconfigErrorBadSeqNumber
		return resp, true
	}
	a.reconf.lastOut = false
	switch r.Type {
	case wire.ParamOutgoingSSNReset:
		lastTSN, streams, err := r.OutgoingSSNReset()
		switch {
		case err != nil:
			a.stats.badChunks++
			resp.Result = wire.ReconfigDenied
		case a.reconf.pending != nil:
			resp.Result = wire.ReconfigErrorInProgress
		case seq.TSNLessEq(lastTSN, a.rt.CumTSN()) && a.rs.ResetStreams(streams):
			resp.Result = wire.ReconfigSuccessPerformed
		default:
			// §5.2.2 step 1: deferred until the peer's data up to lastTSN
			// is in; the peer sends nothing new on those streams meanwhile
			// (§5.1.2). Bounded: one at a time, the size of one chunk.
			a.reconf.pending = &pendingReset{seq: r.SeqNum, lastTSN: lastTSN, streams: append([]byte(nil), streams...)}
			resp.Result = wire.ReconfigInProgress
		}
	case wire.ParamIncomingSSNReset:
		streams, err := r.IncomingSSNReset()
		switch {
		case err != nil || !a.outStreamsValid(streams):
			resp.Result = wire.ReconfigDenied
		case len(a.reconf.outReq) > 0:
			resp.Result = wire.ReconfigErrorInProgress // ours is unanswered
		default:
			// §5.2.3: our Outgoing SSN Reset Request for those streams,
			// answering this one (its Response Sequence Number). No
			// message waits for it: our SSNs are all 0.
			a.reconf.outReq = wire.AppendOutgoingSSNReset(a.reconf.outReq[:0], a.reconf.outSeq, r.SeqNum, a.oq.NextTSN()-1, streams)
			a.reconf.outSeq++
			a.ctrl = append(a.ctrl, a.reconf.outReq...)
			a.reconf.peerSeq++
			a.reconf.answered, a.reconf.lastOut, a.reconf.last = true, true, wire.ReconfigSuccessPerformed
			return resp, false
		}
	default:
		resp.Result = wire.ReconfigDenied
	}
	a.reconf.peerSeq++
	a.reconf.answered, a.reconf.last = true, resp.Result
	return resp, true
}

// outStreamsValid reports whether every stream number of streams (two
// octets each) is one of our outbound streams.
func (a *Association) outStreamsValid(streams []byte) bool {
	for i := 0; i+1 < len(streams); i += 2 {
		if int(streams[i])<<8|int(streams[i+1]) >= a.tcb.outStreams {
			return false
		}
	}
	return true
}

// pendingReset is an Outgoing SSN Reset Request answered "In progress".
type pendingReset struct {
	seq, lastTSN uint32
	streams      []byte
}

// performPendingReset performs a deferred stream reset once it can be and
// sends its "Performed" (RFC 6525 §5.2.2 steps 2, 3). mu is held.
func (a *Association) performPendingReset() {
	p := a.reconf.pending
	if !seq.TSNLessEq(p.lastTSN, a.rt.CumTSN()) || !a.rs.ResetStreams(p.streams) {
		return
	}
	a.reconf.pending = nil
	if a.reconf.peerSeq-1 == p.seq {
		a.reconf.last = wire.ReconfigSuccessPerformed
	}
	a.ctrl = wire.AppendReconfigResponses(a.ctrl, wire.ReconfigResponse{SeqNum: p.seq, Result: wire.ReconfigSuccessPerformed})
}

// describeState is for errors and logs.
func (a *Association) describeState() string { return fmt.Sprintf("%s", a.state) }
