package sctp

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/crc32c"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// directChunk is the size from which a DATA chunk that starts a packet is
// sent from its own buffer (the common header written in the room before
// it) instead of being copied into the packet buffer.
const directChunk = 1024

// maxGapBlocks bounds the Gap Ack Blocks of one SACK.
const maxGapBlocks = 256

// WriteMsg sends the concatenation of parts as one unordered user message
// (U=1; RFC 5043 §10 sends every DDP segment unordered) on stream sid with
// the given PPID (host order). A message longer than MaxMessage is
// fragmented (RFC 9260 §6.9). WriteMsg blocks while the send buffer is
// full; it returns ErrClosed (wrapped) once the association has ended or
// is shutting down, ErrStreamRange for sid beyond the outbound streams and
// ErrEmptyMessage for no octets. parts are not retained.
func (a *Association) WriteMsg(sid uint16, ppid uint32, parts ...[]byte) error {
	return a.writeMsg(false, sid, ppid, parts)
}

// WriteMsgMore is WriteMsg for a message that more follow at once, as the
// segments of one DDP message do (llp.Batcher). Where several packets go
// in one system call (Linux, Config.NoOffload unset) the message may wait
// until the next WriteMsg, until one system call's worth waits, or until
// a writer waits for room, so that a whole DDP message leaves together;
// elsewhere it is WriteMsg. As with TCP's MSG_MORE, the caller follows it
// with a WriteMsg; anything that transmits (a SACK, a timer) sends it too.
func (a *Association) WriteMsgMore(sid uint16, ppid uint32, parts ...[]byte) error {
	return a.writeMsg(true, sid, ppid, parts)
}

// Flush sends what WriteMsgMore left waiting, if anything, as WriteMsg
// would have. It fails only on an association that has ended.
func (a *Association) Flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.corked > 0 {
		a.transmit(time.Now())
	}
	if a.state == stateClosed {
		if a.err != nil {
			return fmt.Errorf("%w: %w", ErrClosed, a.err)
		}
		return ErrClosed
	}
	return nil
}

func (a *Association) writeMsg(more bool, sid uint16, ppid uint32, parts [][]byte) error {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total == 0 {
		return ErrEmptyMessage
	}
	cut := newFragCut(total, a.MaxMessage())
	nfrag := cut.n
	// The buffers the chunks will take, known before any is filled.
	size := 0
	for f := 0; f < nfrag; f++ {
		size += bufClass(wire.HeaderLen + wire.DataHeaderLen + cut.size(f) + 3)
	}

	// Room in the send buffer is reserved before the message is copied:
	// a writer waiting for space holds no buffer, so that with hundreds of
	// writers waiting the octets are copied just before they leave, while
	// still in the cache (copying first and waiting afterwards made the
	// CRC and the send read cold memory: 1,000 writers of 64 KiB each
	// moved half what 8 did).
	a.mu.Lock()
	if err := a.writable(sid); err != nil {
		a.mu.Unlock()
		return err
	}
	if size > a.cfg.SendBuffer && nfrag > 1 {
		a.mu.Unlock()
		return fmt.Errorf("%w: %d octets", ErrMessageTooLarge, total)
	}
	// The clock is read only when someone waits (mustQueue needs it
	// then): a writer that finds room reads it once, to transmit.
	fits := a.fitsSend(size)
	var now time.Time
	if !fits || len(a.io.writers) > 0 {
		now = time.Now()
	}
	granted := false
	if a.mustQueue(now, fits) && !a.completesCork(size) {
		// Writers wait for space in arrival order, and once the first
		// has waited writerPatience nobody goes ahead of it any more, so
		// that one stream's writer cannot take the space freed for
		// another's again and again (with 256 streams on one
		// association, that left some writers waiting 1.5 s). The space
		// is reserved for a writer when it is woken (grantWriters).
		// What WriteMsgMore held goes first: its SACKs free the room.
		if a.corked > 0 {
			a.transmit(now)
		}
		if err := a.waitForSpace(sid, size, now); err != nil {
			a.mu.Unlock()
			return err
		}
		granted = true
	} else {
		a.sndBuffered += size
	}
	withCRC := !a.tcb.zeroTx
	a.mu.Unlock()

	// Marshal the chunks outside the lock.
	pooled := chunkSlices.Get().(*[]txChunk)
	chunks := appendChunks(slices.Grow((*pooled)[:0], nfrag), sid, ppid, parts, cut, withCRC)
	err := a.queue(sid, chunks, size, more, granted)
	if cap(chunks) <= maxPooledFrags {
		clear(chunks) // queue copied them; their buffers are not ours
		*pooled = chunks[:0]
		chunkSlices.Put(pooled)
	}
	return err
}

// chunkSlices holds the slices a message's chunks are built in before
// queue copies them (a local array would escape), so that writing one
// allocates nothing; a slice for more than maxPooledFrags fragments is
// left to the collector.
var chunkSlices = sync.Pool{New: func() any { return new([]txChunk) }}

const maxPooledFrags = 1024

// fragCut is how a message of total octets is cut into n fragments of at
// most frag octets (RFC 9260 §6.9 sets no sizes): into sizes that differ
// by one octet where their chunks pad to one size, so that a run of
// packets (UDP_SEGMENT: one size but the last) does not end at the
// message's short last fragment; at frag but the last otherwise.
type fragCut struct {
	total, frag, n int
	q, r           int // even: r fragments of q+1 octets, then q
	even           bool
}

func newFragCut(total, frag int) fragCut {
	c := fragCut{total: total, frag: frag, n: (total + frag - 1) / frag}
	if c.n > 1 {
		q, r := total/c.n, total%c.n
		pad := func(n int) int { return (wire.DataHeaderLen + n + 3) &^ 3 }
		if r == 0 || pad(q) == pad(q+1) {
			c.q, c.r, c.even = q, r, true
		}
	}
	return c
}

// size returns the octets of fragment f.
func (c fragCut) size(f int) int {
	switch {
	case !c.even:
		return min(c.frag, c.total-f*c.frag)
	case f < c.r:
		return c.q + 1
	}
	return c.q
}

// appendChunks appends to dst the DATA chunks of one message, the
// concatenation of parts, in the fragments of cut: DATA header (TSN
// later), user data, padding, each in a pooled buffer with room for the
// common header before it.
func appendChunks(dst []txChunk, sid uint16, ppid uint32, parts [][]byte, cut fragCut, withCRC bool) []txChunk {
	nfrag := cut.n
	pi, po := 0, 0 // position in parts
	for f := 0; f < nfrag; f++ {
		n := cut.size(f)
		bp := getBuf(wire.HeaderLen + wire.DataHeaderLen + n + 3)
		d := wire.Data{Unordered: true, Beginning: f == 0, Ending: f == nfrag-1, StreamID: sid, PPID: ppid}
		b := d.AppendHeader((*bp)[:wire.HeaderLen], n)
		// A chunk that may leave alone (directChunk) gets the CRC32c of
		// its data block by block as it is copied, each block still in
		// the first-level cache, rather than in a second pass over the
		// whole packet. A block is crcBlock octets of the chunk, whatever
		// parts they came from (a DDP header and its payload are one),
		// the padding in the last: one long update instead of a short one
		// per part, whose cost is mostly its fixed part.
		crc, withCRC := uint32(0), withCRC && n >= directChunk
		from := len(b) // start of what is copied and not yet checksummed
		for need := n; need > 0; {
			p := parts[pi][po:]
			k := min(len(p), need)
			if withCRC {
				k = min(k, from+crcBlock-len(b))
			}
			b = append(b, p[:k]...)
			need -= k
			po += k
			if po == len(parts[pi]) {
				pi, po = pi+1, 0
			}
			if withCRC && len(b)-from == crcBlock && need > 0 {
				crc = crc32c.Update(crc, b[from:])
				from = len(b)
			}
		}
		b = wire.Pad(b)
		if withCRC {
			crc = crc32c.Update(crc, b[from:])
		}
		dst = append(dst, txChunk{buf: bp, n: len(b) - wire.HeaderLen, crc: crc, hasCRC: withCRC})
	}
	return dst
}

// crcBlock is how much appendChunks copies before it checksums what it
// copied: well inside a first-level data cache (32 KiB and more).
const crcBlock = 8 << 10

// queue adds the chunks of one message, size octets of buffers reserved
// for them (granted: by grantWriters), to what is pending, and transmits
// unless WriteMsgMore holds them or writers granted space with this one
// are still copying.
func (a *Association) queue(sid uint16, chunks []txChunk, size int, more, granted bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if granted && a.copying > 0 { // 0: the association ended meanwhile
		a.copying--
	}
	if err := a.writable(sid); err != nil {
		releaseChunks(chunks)
		if a.state != stateClosed {
			// Shutting down: the reservation is given back (the end of
			// the association has reset the accounting already), and
			// what the writers granted with this one queued goes.
			a.sndBuffered -= size
			if a.copying == 0 && a.pendHead < len(a.pend) {
				a.transmit(time.Now())
			}
		}
		return err
	}
	// WriteMsgMore holds messages until a run is as long as one send
	// takes: counted in packet octets, as the batch counts them (counted
	// in buffer octets, 2 KiB per MTU-1500 packet, a run was cut after 32
	// of its 44 packets). A message that would overfill the run leaves it
	// to go first and starts the next.
	pk := 0
	for i := range chunks {
		pk += wire.HeaderLen + chunks[i].n
	}
	if more && a.io.batch != nil && (!a.deferred || a.copying > 0) {
		// (What writers left to this one to transmit is not held.)
		limit := a.io.batch.corkLimit()
		if a.corked > 0 && a.corked+pk > limit && a.copying == 0 {
			a.io.writerTx = true
			a.transmit(time.Now())
			a.io.writerTx = false
		}
		if a.corked+pk <= limit {
			a.pend = append(a.pend, chunks...)
			a.stats.userMsgsSent++
			a.corked += pk
			return nil
		}
	}
	a.pend = append(a.pend, chunks...)
	a.stats.userMsgsSent++
	if a.copying > 0 {
		// Writers granted space by the same SACK are still copying:
		// the last of them transmits what all queued, in one run of
		// packets (sendmmsg) where each sent its own with a system
		// call under mu, one after the other.
		a.deferred = true
		return nil
	}
	a.io.writerTx = true
	a.transmit(time.Now())
	a.io.writerTx = false
	return nil
}

func releaseChunks(cs []txChunk) {
	for i := range cs {
		putBuf(cs[i].buf)
	}
}

// writable reports why a message cannot be queued now. mu is held.
func (a *Association) writable(sid uint16) error {
	switch a.state {
	case stateEstablished:
	case stateCookieWait, stateCookieEchoed:
		// RFC 9260 §5.1 lets DATA wait for the association; the dialer
		// returns only once it is established, so this is a misuse.
		return fmt.Errorf("%w: not established", ErrClosed)
	case stateClosed:
		if a.err != nil {
			return fmt.Errorf("%w: %w", ErrClosed, a.err)
		}
		return ErrClosed
	default:
		return fmt.Errorf("%w: shutting down (%s)", ErrClosed, a.state)
	}
	if a.closing {
		return fmt.Errorf("%w: shutting down", ErrClosed)
	}
	if int(sid) >= a.tcb.outStreams {
		return fmt.Errorf("%w: %d >= %d outbound streams", ErrStreamRange, sid, a.tcb.outStreams)
	}
	return nil
}

// canSendData reports whether DATA may be sent in the current state.
func (a *Association) canSendData() bool {
	switch a.state {
	case stateEstablished, stateShutdownPending, stateShutdownReceived:
		return true
	}
	return false
}

// transmit sends what may be sent now, bundled into as few packets as the
// path allows (RFC 9260 §6.1, §6.10): control chunks and a SACK that is
// due first, then DATA marked for retransmission (one packet regardless
// of cwnd after a Fast Retransmit, §7.2.4 step 3; otherwise within cwnd,
// §6.1 rule C), then new DATA within cwnd and the peer's window (rules A
// and B). mu is held.
func (a *Association) transmit(now time.Time) {
	dst := a.primaryPath()
	a.corked, a.deferred = 0, false
	if a.mh != nil {
		a.mhPick(a.oq != nil && a.canSendData() && (a.pendHead < len(a.pend) || a.oq.Marked() > 0))
	}
	// The packets of this transmission leave in runs, one system call
	// each, once the last is built (txBatch), when it may send more than
	// one: a lone packet (a SACK, a request) goes as before, uncopied.
	batched := a.io.batch != nil && !a.io.batching && a.oq != nil && (len(a.pend)-a.pendHead >= 2 || a.oq.Marked() >= 2)
	a.io.batching = a.io.batching || batched
	p := a.io.pkt[:wire.HeaderLen]
	copy(p, a.io.hdr[:])
	if len(a.ctrl) > 0 {
		p = append(p, a.ctrl...)
		a.ctrl = a.ctrl[:0]
	}
	if a.rt != nil {
		_, delayed := a.rt.SACKDeadline()
		hasData := a.oq != nil && a.canSendData() && (a.pendHead < len(a.pend) || a.oq.Marked() > 0)
		// A SACK that is due goes now; one that is only delayed rides on
		// the DATA about to leave (RFC 9260 §6.2: bundled with outgoing
		// DATA), which saves a packet per request in request/response
		// traffic.
		if a.rt.SACKDue(now) || (delayed && hasData) {
			p = a.appendSACK(p)
		}
	}
	sentData := false
	budget := -1 // what Max.Burst leaves this transmission; -1: not sending
	if a.oq != nil && a.canSendData() {
		if a.fastRtx {
			a.fastRtx = false
			for tsn, _, ok := a.oq.FirstMarked(); ok; tsn, _, ok = a.oq.NextMarked(tsn) {
				c := &a.sent[a.oq.slot(tsn)]
				if len(p)+c.n > a.maxPacket && len(p) > wire.HeaderLen {
					break
				}
				if tsn == a.oq.CumTSN()+1 {
					// §7.2.4 step 4: retransmitting the first outstanding
					// chunk restarts T3-rtx, so that it does not expire
					// on the fast retransmission's heels.
					if a.mh != nil {
						a.mhSetT3(a.mh.txPath, now, true)
					} else {
						a.io.timers.SetAfter(timerT3Rtx, now, dst.rto.RTO())
					}
				}
				size, _ := a.oq.OnRetransmit(tsn, now)
				dst.cc.OnSend(size)
				a.stats.retransmits++
				p = a.addChunk(p, c)
				sentData = true
			}
		}
		// After a T3-rtx expiry cwnd is one packet (§7.2.3), and a chunk
		// built before the PLPMTU fell is several of the new packets: it
		// may be all the window takes, alone in flight, and the peer would
		// delay its SACK (§6.2) for each. Such a retransmission asks for an
		// immediate SACK (RFC 7053 §4.1): in slow start, or oversize.
		rtxImm := dst.cc.InSlowStart()
		budget = a.burstBudget(now)
		// A chunk larger than the whole budget (built before the PLPMTU
		// fell: 8944 octets against 4 × 1252) goes alone, first.
		full := budget
		for tsn, size, ok := a.oq.FirstMarked(); ok && dst.cc.CanRetransmit(size) && (size <= budget || budget == full); tsn, size, ok = a.oq.NextMarked(tsn) {
			c := &a.sent[a.oq.slot(tsn)]
			budget -= size
			if rtxImm || c.n > a.maxPacket-wire.HeaderLen {
				c.chunk()[1] |= wire.DataFlagImmediate
			}
			a.oq.OnRetransmit(tsn, now)
			dst.cc.OnSend(size)
			a.stats.retransmits++
			p = a.addChunk(p, c)
			sentData = true
		}
		limited := false
		if a.oq.Marked() == 0 {
			if a.oq.Len() == 0 && a.pendHead < len(a.pend) && !dst.lastDataSent.IsZero() {
				// §7.2.1: cwnd decays by half per RTO without DATA sent,
				// to initialCwnd after a long idle, before data goes again.
				if idle, rto := now.Sub(dst.lastDataSent), dst.rto.RTO(); idle >= rto {
					dst.cc.OnIdle(idle, rto)
					dst.lastDataSent = now // that idleness is accounted for
				}
			}
			imm := a.immediateSACKs()
			wait := a.deferRun() || a.burstDefer(budget)
			dst.cc.heldBack = wait
			for !wait && a.pendHead < len(a.pend) && !a.oq.Full() {
				c := a.pend[a.pendHead]
				if !dst.cc.CanSend(c.n) {
					limited = !dst.cc.CanRetransmit(c.n)
					break
				}
				if c.n > budget && budget != full {
					break // §6.1 D: Max.Burst
				}
				budget -= c.n
				tsn, _ := a.oq.Add(c.n, now)
				binary.BigEndian.PutUint32(c.chunk()[4:], tsn)
				if imm {
					c.chunk()[1] |= wire.DataFlagImmediate
				}
				a.sent[a.oq.slot(tsn)] = c
				a.pend[a.pendHead] = txChunk{}
				a.pendHead++
				dst.cc.OnSend(c.n)
				a.stats.dataSent++
				p = a.addChunk(p, &c)
				sentData = true
			}
			if a.pendHead == len(a.pend) {
				a.pend, a.pendHead = a.pend[:0], 0
			}
		}
		dst.cwndLimited = limited
	}
	if len(p) > wire.HeaderLen {
		a.seal(p)
		a.sendPacket(p)
	}
	a.io.pkt = p[:wire.HeaderLen]
	if budget >= 0 {
		a.burstUsed(budget)
	}
	if batched {
		a.io.batching = false
		a.flushBatch()
	}
	if sentData {
		dst.lastDataSent = now
		if a.mh != nil {
			a.mhSent(now)
		}
		if a.mh != nil {
			a.mhSetT3(a.mh.txPath, now, false) // that destination's (§6.3.2)
		} else if !a.io.timers.Running(timerT3Rtx) {
			a.io.timers.SetAfter(timerT3Rtx, now, dst.rto.RTO()) // §6.3.2 R1
		}
	}
	a.armDelayedAck()
	a.arm(now)
	if a.io.refused >= 2 {
		a.portUnreachable(nil)
	}
}

// burstBudget returns the octets of DATA one transmission may send at now
// (RFC 9260 §6.1 D): Max.Burst packets beyond what left the flight,
// acknowledged or marked for retransmission, since the flight last grew
// (burstFreed). The RFC's formula, cwnd = flightsize + Max.Burst * MTU,
// taken with the flight after a SACK, would let a SACK that acknowledges
// many packets at once (UDP_GRO, a stretch SACK) replace only four of
// them: the window it opened would go unused. This keeps the ACK clock,
// and still stops a burst after idleness or from a window opening at once.
// mu is held.
func (a *Association) burstBudget(now time.Time) int {
	if a.cfg.MaxBurst < 0 {
		return math.MaxInt
	}
	// With nothing in flight, where packets leave in runs (UDP_SEGMENT),
	// the credit lasts one smoothed round trip after the SACK that freed
	// it: what is written that soon leaves as it would have with that SACK
	// (a Read Response one client turn after the SACK of the last; without
	// it each response left in runs of 4, 8, 16 and 19 packets, a round
	// trip each). Later the ACK clock has stopped: Max.Burst. Without runs
	// burstUsed ends the credit at once, as before (kept on loopback, the
	// usrsctp suite's drops at its socket left larger gaps).
	if dst := a.primaryPath(); dst.cc.Flight() == 0 && a.sendsRuns() {
		if now.Sub(a.burstAt) > dst.rto.SRTT() {
			a.burstFreed = 0
		}
	}
	return a.cfg.MaxBurst*a.maxPacket + a.burstFreed
}

// burstUsed takes what a transmission sent out of the credit, left is
// what remained of its budget: the credit of freed octets stays for the
// next transmission (a writer's, before the next SACK), within cwnd,
// while data is in flight; with none, it ends here, or where packets
// leave in runs once burstBudget finds the flight empty a round trip. mu
// is held.
func (a *Association) burstUsed(left int) {
	if a.cfg.MaxBurst < 0 {
		return
	}
	if a.primaryPath().cc.Flight() == 0 && !a.sendsRuns() {
		a.burstFreed = 0
		return
	}
	a.burstFreed = min(max(left-a.cfg.MaxBurst*a.maxPacket, 0), a.primaryPath().cc.Cwnd())
}

// deferRun reports whether new DATA should wait for the next SACK rather
// than leave now in a short run (as Linux TCP's tcp_tso_should_defer). A
// window that opens by the few packets one SACK acknowledges would keep
// the runs that short, each read whole (UDP_GRO) and answered with one
// SACK. Waiting while a quarter of the window is in flight lets the runs
// grow to runGoal. Only with runs (UDP_SEGMENT), outside Fast Recovery,
// in congestion avoidance, or in slow start while the peer's window, not
// cwnd, limits (a sender that loses nothing stays in slow start). mu is
// held.
func (a *Association) deferRun() bool {
	dst := a.primaryPath()
	if !a.sendsRuns() || (dst.cc.InSlowStart() && a.cwndBinds()) {
		return false
	}
	if _, inFR := dst.cc.InFastRecovery(); inFR {
		return false
	}
	cwnd, flight := dst.cc.Cwnd(), dst.cc.Flight()
	goal := min(runGoal(a.maxPacket), cwnd/4)
	if flight < goal || flight < 4*a.maxPacket {
		return false // too little in flight for its SACKs to free a run
	}
	room := min(cwnd+dst.cc.PMDCS()-1-flight, dst.cc.Rwnd())
	if room >= goal {
		return false
	}
	return a.pendingRun(goal)
}

// pendingRun reports whether goal octets of new DATA wait: only a sender
// with a run's worth waiting defers; a shorter message (a request, the
// end of a transfer) goes now. mu is held.
func (a *Association) pendingRun(goal int) bool {
	pending := 0
	for i := a.pendHead; i < len(a.pend) && pending < goal; i++ {
		pending += a.pend[i].n
	}
	return pending >= goal
}

// burstDefer reports whether a writer's transmission should leave its new
// DATA to the next SACK because Max.Burst (RFC 9260 §6.1 D) would cut it
// to a short run (budget octets) while SACKs are on their way: the SACK's
// transmission has the credit of what it frees and sends the data in one
// longer run. Over a veth pair at MTU 1500 a quarter of the sends were
// such writers' four packets. Conditions as deferRun's, in slow start
// unless cwnd limits. mu is held.
func (a *Association) burstDefer(budget int) bool {
	if !a.io.writerTx {
		return false
	}
	dst := a.primaryPath()
	if a.io.batch == nil || a.io.batch.gso == nil {
		return false
	}
	if _, inFR := dst.cc.InFastRecovery(); inFR {
		return false
	}
	cwnd, flight := dst.cc.Cwnd(), dst.cc.Flight()
	goal := min(runGoal(a.maxPacket), cwnd/4)
	if dst.cc.InSlowStart() && cwnd+dst.cc.PMDCS()-1-flight < goal {
		return false // cwnd limits: slow start grows it per SACK
	}
	return budget < goal && flight >= max(goal, 4*a.maxPacket) && a.pendingRun(goal)
}

// cwndBinds reports whether cwnd, not the peer's window, limits what may
// be sent: in slow start only then does a SACK grow it. mu is held.
func (a *Association) cwndBinds() bool {
	cc := a.primaryPath().cc
	return cc.Cwnd()+cc.PMDCS()-1-cc.Flight() <= cc.Rwnd()
}

// sendsRuns reports whether the association's packets leave in runs, one
// UDP_SEGMENT send each. mu is held.
func (a *Association) sendsRuns() bool { return a.io.batch != nil && a.io.batch.gso != nil }

// runGoal is the run of packets of maxPacket octets deferRun waits for:
// half of what one UDP_SEGMENT send takes.
func runGoal(maxPacket int) int {
	return min(gsoMaxBytes/2, gsoMaxSegments/2*maxPacket)
}

// immediateSACKs reports whether new DATA asks for an immediate SACK with
// the I bit (RFC 9260 §3.3.1, RFC 7053 §4.1): in slow start, outside Fast
// Recovery, while cwnd limits the sender. §7.2.1 grows cwnd by one PMDCS
// per SACK, so a SACK per second packet (§6.2) grows it 1.5 times a round
// trip; one per packet makes it double, as TCP's per-segment ACKs (and
// Linux's quick-ACK mode) do. A sender limited by the user or the peer's
// window, or in congestion avoidance, asks for nothing. mu is held.
func (a *Association) immediateSACKs() bool {
	dst := a.primaryPath()
	if !dst.cwndLimited || !dst.cc.InSlowStart() {
		return false
	}
	_, inFR := dst.cc.InFastRecovery()
	return !inFR
}

// addChunk adds one DATA chunk to the packet p, sending p first if the
// chunk does not fit. A large chunk that starts a packet goes out from its
// own buffer. It returns the packet being built. mu is held.
func (a *Association) addChunk(p []byte, c *txChunk) []byte {
	if len(p)+c.n > a.maxPacket && len(p) > wire.HeaderLen {
		a.seal(p)
		a.sendPacket(p)
		p = p[:wire.HeaderLen]
	}
	if len(p) == wire.HeaderLen && c.n >= directChunk {
		b := (*c.buf)[:wire.HeaderLen+c.n]
		copy(b, a.io.hdr[:])
		if c.hasCRC && !a.tcb.zeroTx {
			const head = wire.HeaderLen + wire.DataHeaderLen
			a.setChecksumTail(b, head, c.crc)
		} else {
			a.seal(b)
		}
		a.sendPacketFrom(b, true)
		return p
	}
	return append(p, c.chunk()...)
}

// seal sets the Checksum field of a packet of this association with the
// peer's tag: zero to a peer that accepts it (RFC 9653 §5.2), except on a
// packet that starts with a COOKIE ECHO, otherwise the CRC32c. mu is held.
func (a *Association) seal(p []byte) {
	if a.tcb.zeroTx && !wire.ChecksumRequired(p) {
		wire.SetZeroChecksum(p)
		return
	}
	wire.SetChecksum(p)
}

// setChecksumTail completes the checksum of a packet of one DATA chunk
// whose data (from head on) has the CRC32c tail: with the tables of
// a.crcTab for the length that repeats (the full-size chunks of a
// transfer), otherwise with crc32c.Shift, remembered for the last length;
// the second packet in a row of one length that misses the tables makes
// them that length's, so that lengths alternating with it (last
// fragments) do not rebuild them each time. mu is held.
func (a *Association) setChecksumTail(b []byte, head int, tail uint32) {
	n := len(b) - head
	if a.io.crcTab != nil && a.io.crcTab.Len() == n {
		a.io.crcMiss = 0
		wire.SetChecksumTailShift(b, head, tail, a.io.crcTab)
		return
	}
	if uint32(n) == a.io.crcShiftLen {
		a.io.crcMiss++
	} else {
		a.io.crcShift, a.io.crcShiftLen, a.io.crcMiss = crc32c.Shift(n), uint32(n), 1
	}
	if a.io.crcMiss >= 2 {
		if a.io.crcTab == nil {
			a.io.crcTab = new(wire.TailShift)
		}
		a.io.crcTab.Reset(n)
		a.io.crcMiss = 0
		wire.SetChecksumTailShift(b, head, tail, a.io.crcTab)
		return
	}
	wire.SetChecksumTail(b, head, tail, a.io.crcShift)
}

// appendSACK appends a SACK of the current receive state (RFC 9260
// §6.2, §3.3.4) to p. mu is held.
func (a *Association) appendSACK(p []byte) []byte {
	a.gaps = a.rt.AppendGapBlocks(a.gaps[:0], maxGapBlocks)
	a.dups = a.rt.AppendDuplicates(a.dups[:0])
	s := wire.SACK{CumTSNAck: a.rt.CumTSN(), ARwnd: a.rwnd(), Gaps: a.gaps, Dups: a.dups}
	a.advRwnd = s.ARwnd
	a.rt.SACKSent()
	a.io.timers.Stop(timerDelayedAck)
	a.stats.sacksSent++
	return s.Append(p)
}

// delivered returns octets handed to the user to the receive window, and
// sends a window update when the peer may be held back by the window it
// knows of (RFC 9260 §6.2: a SACK "to update the offered window as the
// receiving application consumes new data").
func (a *Association) delivered(octets int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rxQueued -= octets
	a.releaseReceive(octets)
	if a.rt == nil || a.state == stateClosed {
		return
	}
	if a.windowUpdateDue() {
		a.ctrl = a.appendSACK(a.ctrl)
		a.transmit(time.Now())
	}
}

// windowUpdateDue reports whether the window has opened enough beyond the
// one last advertised to be worth a SACK of its own: from below two
// packets to two packets or more, or, when it was below half the buffer,
// by a sixteenth of the buffer or two packets, whichever is more (Linux
// sends its updates at the same point, rcvbuf >> 4; as receiver-side
// silly window avoidance, the window does not creep open a packet at a
// time). Without the second, an a_rwnd of a few KiB sent while the
// delivery goroutine was behind left the sender's window at zero with
// dropped chunks outstanding, waiting for T3-rtx once the window had
// long reopened. mu is held.
func (a *Association) windowUpdateDue() bool {
	adv, now, buf := int(a.advRwnd), int(a.rwnd()), a.cfg.ReceiveBuffer
	if adv < 2*a.maxPacket && now >= 2*a.maxPacket {
		return true
	}
	return adv < buf/2 && now >= adv+max(buf/16, 2*a.maxPacket)
}

// armDelayedAck sets the delayed-ack timer to the SACK deadline, if a
// SACK is owed (RFC 9260 §6.2), and stops it if none is. mu is held.
func (a *Association) armDelayedAck() {
	if a.rt == nil {
		return
	}
	if at, ok := a.rt.SACKDeadline(); ok {
		if !a.io.timers.Running(timerDelayedAck) {
			a.io.timers.Set(timerDelayedAck, at)
		}
	} else {
		a.io.timers.Stop(timerDelayedAck)
	}
}
