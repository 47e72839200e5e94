package sctp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/procstat"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// listenerQueueBytes is the least the receive queues of all of a
// listener's associations hold together (Listener.listenerQueueCap).
const listenerQueueBytes = 64 << 20

// rxItem is one read queued for an association: n octets in bp, from
// from; seg > 0 for a coalesced read (UDP_GRO) of packets of seg octets.
type rxItem struct {
	bp     *[]byte
	n, seg int
	from   netip.AddrPort
	to     netip.Addr // the local address it reached (multihomed; else zero)
	at     int64      // UnixNano of the read
}

// readLoop reads the listener's socket and demultiplexes: packets of
// known associations go to their queues, the others to the Responder.
// It does no association's work itself.
func (l *Listener) readLoop() {
	defer close(l.readDone)
	r := newUDPReader(l.pc, !l.cfg.NoOffload, l.multi)
	bp := getBuf(largeBuf)
	for {
		n, seg, from, to, err := r.read(*bp)
		if err != nil {
			if transientReadError(err) {
				continue
			}
			putBuf(bp)
			l.mu.Lock()
			ms := make([]*member, 0, len(l.assocs))
			for _, m := range l.assocs {
				ms = append(ms, m)
			}
			l.mu.Unlock()
			for _, m := range ms {
				m.a.mu.Lock()
				m.a.terminate(fmt.Errorf("%w: listener socket: %w", ErrClosed, err))
				m.a.mu.Unlock()
			}
			l.probe.close()
			return
		}
		if to.IsValid() && !slices.Contains(l.hosts, to) {
			// The wildcard socket took a packet sent to an address this
			// listener was not given: not its endpoint's (RFC 9260 §1.5.1).
			l.stats.Unbound.Add(1)
			procstat.Listeners.Unbound.Add(1)
			continue
		}
		if l.dispatch(bp, n, seg, unmap(from), to, time.Now().UnixNano()) {
			bp = getBuf(largeBuf)
		}
	}
}

// dispatch routes one read of n octets in bp: to the queue of its
// association, or through the stateless handshake. It reports whether bp
// was handed over (the caller needs another buffer).
func (l *Listener) dispatch(bp *[]byte, n, seg int, from netip.AddrPort, to netip.Addr, at int64) bool {
	b := (*bp)[:n]
	if seg > 0 && seg < n {
		return l.dispatchSegments(bp, n, seg, from, to, at)
	}
	l.mu.Lock()
	m := l.lookup(b, from)
	l.mu.Unlock()
	if m != nil {
		return l.enqueue(m, bp, n, 0, from, to, at)
	}
	return l.unknown(b, bp, from)
}

// dispatchSegments routes a coalesced read: whole to one association if
// every packet is that association's (the usual case, one peer's burst),
// else packet by packet.
func (l *Listener) dispatchSegments(bp *[]byte, n, seg int, from netip.AddrPort, to netip.Addr, at int64) bool {
	b := (*bp)[:n]
	l.mu.Lock()
	first := l.lookup(b[:min(seg, n)], from)
	same := first != nil
	for off := seg; same && off < n; off += seg {
		same = l.lookup(b[off:min(off+seg, n)], from) == first
	}
	l.mu.Unlock()
	if same {
		return l.enqueue(first, bp, n, seg, from, to, at)
	}
	for off := 0; off < n; off += seg {
		p := b[off:min(off+seg, n)]
		l.mu.Lock()
		m := l.lookup(p, from)
		l.mu.Unlock()
		if m == nil {
			l.unknown(p, nil, from)
			continue
		}
		c := getBuf(len(p))
		copy(*c, p)
		if !l.enqueue(m, c, len(p), 0, from, to, at) {
			putBuf(c)
		}
	}
	return false
}

// enqueue queues a read for m's worker and starts the worker if none
// runs. A single packet well below the read buffer is copied into a
// buffer of its size class, so that a queue holds memory in proportion to
// what arrived; so is a coalesced read (UDP_GRO) once the queue is half
// full, lest a worker that lags behind a fast peer overflow its queue,
// counted in buffers, before the window closes. A read that does not fit
// m's queue, or all queues together, is dropped and counted (SCTP
// recovers a lost packet). It reports whether bp was handed over.
func (l *Listener) enqueue(m *member, bp *[]byte, n, seg int, from netip.AddrPort, to netip.Addr, at int64) bool {
	handed := true
	compact := seg == 0
	if !compact && bufClass(n) < cap(*bp) {
		m.qmu.Lock()
		compact = 2*(m.qBytes+cap(*bp)) > l.queueCap
		m.qmu.Unlock()
	}
	if compact && bufClass(n) < cap(*bp) {
		c := getBuf(n)
		copy(*c, (*bp)[:n])
		bp, handed = c, false
	}
	size := cap(*bp)
	m.qmu.Lock()
	if m.qBytes+size > l.queueCap || l.queued.Load()+int64(size) > l.listenerQueueCap {
		m.qmu.Unlock()
		l.stats.QueueDrops.Add(1)
		procstat.Listeners.QueueDrops.Add(1)
		if handed {
			return false // the caller reuses it
		}
		putBuf(bp)
		return false
	}
	m.q = append(m.q, rxItem{bp: bp, n: n, seg: seg, from: from, to: to, at: at})
	m.qBytes += size
	l.queued.Add(int64(size))
	start := !m.running
	m.running = true
	m.qmu.Unlock()
	if start {
		go m.work() // a func value made once: no closure per start
	}
	return handed
}

// work drains m's queue, one read at a time in arrival order, and ends
// when the queue is empty: an idle association has no worker.
func (l *Listener) work(m *member) {
	waited := false // the last read's transmission waits for this one
	for {
		m.qmu.Lock()
		if m.head == len(m.q) {
			clear(m.q)
			m.q, m.head, m.running = m.q[:0], 0, false
			if cap(m.q) > 1024 {
				m.q = nil // a burst's backlog is not kept
			}
			m.qmu.Unlock()
			return
		}
		it := m.q[m.head]
		m.q[m.head] = rxItem{}
		m.head++
		if m.head >= 32 && 2*m.head >= len(m.q) {
			// Under steady load the queue never empties: the consumed
			// head is dropped so that appends reuse the slice.
			k := copy(m.q, m.q[m.head:])
			clear(m.q[k:])
			m.q, m.head = m.q[:k], 0
		}
		size := cap(*it.bp)
		m.qBytes -= size
		l.queued.Add(-int64(size))
		// A coalesced read followed by another already queued may leave
		// its SACK to that one: one SACK per two reads under load.
		wait := it.seg > 0 && !waited && m.head < len(m.q) && m.q[m.head].seg > 0
		m.qmu.Unlock()
		l.process(m, it, !wait)
		waited = wait
	}
}

// process hands one read to m's association (worker only); flush false
// lets a coalesced read's transmission wait for the next read.
func (l *Listener) process(m *member, it rxItem, flush bool) {
	a := m.a
	b := (*it.bp)[:it.n]
	if isClosed(a.done) {
		// Queued before the association ended: routed afresh, to a new
		// association of the peer or to the answers of RFC 9260 §8.4.
		if !l.dispatch(it.bp, it.n, it.seg, it.from, it.to, it.at) {
			putBuf(it.bp)
		}
		return
	}
	if l.multi {
		p := b
		if it.seg > 0 {
			p = b[:min(it.seg, len(b))]
		}
		if a.mhNoteFrom(it.from, it.to, p) { // another path, or one path's new port
			l.stats.Rebinds.Add(1)
			procstat.Listeners.Rebinds.Add(1)
		}
	} else if it.from != m.peer && !l.rebind(m, b, it.seg, it.from) {
		putBuf(it.bp)
		return
	}
	m.lastRecv.Store(it.at)
	if it.seg > 0 {
		kept := a.receiveSegments(b, it.bp, it.seg, flush)
		l.restarted(m, nil, it.from)
		if !kept {
			putBuf(it.bp)
		}
		return
	}
	if a.receive(b, it.bp) {
		return
	}
	if !l.restarted(m, it.bp, it.from) {
		putBuf(it.bp)
	}
}

// restarted makes the new association of a peer that restarted (RFC 9260
// §5.2.4 case A): the old one ended, the same COOKIE ECHO, held in bp,
// makes the new one. It reports whether the new association kept bp.
func (l *Listener) restarted(m *member, bp *[]byte, from netip.AddrPort) bool {
	r, ok := m.a.takeRestart()
	if !ok {
		return false
	}
	l.admit.Lock()
	defer l.admit.Unlock()
	if !l.isAccepting() {
		return false
	}
	l.forget(m)
	return l.adopt(&r.ck, r.rest, bp, from)
}

// rebind takes a packet of m's association from the peer's address and a
// new UDP port: after the checksum and the Verification Tag check, the
// port is the peer's encapsulation port from now on (RFC 6951 §5.4; a NAT
// that rebound). It reports whether the packet is to be received.
func (l *Listener) rebind(m *member, b []byte, seg int, from netip.AddrPort) bool {
	p := b
	if seg > 0 {
		p = b[:min(seg, len(b))]
	}
	if len(p) < wire.HeaderLen+4 || binary.BigEndian.Uint32(p[4:8]) != m.tag || !m.a.checksumOK(p) {
		return false
	}
	l.mu.Lock()
	nk := m.key
	nk.peer = from
	if l.assocs[m.key] != m || l.assocs[nk] != nil {
		l.mu.Unlock()
		return false
	}
	delete(l.assocs, m.key)
	m.key = nk
	l.assocs[nk] = m
	l.mu.Unlock()
	a := m.a
	out := func(p []byte) error { _, err := l.pc.WriteToUDPAddrPort(p, from); return err }
	a.mu.Lock()
	a.flushBatch()
	a.io.out = out
	if a.io.batch != nil {
		a.io.batch = newBatch(l.pc, from, from.Addr(), out, l.offload, l.cfg.offloadLocal)
	}
	a.primaryPath().setRemote(from)
	a.mu.Unlock()
	m.peer = from
	l.stats.Rebinds.Add(1)
	procstat.Listeners.Rebinds.Add(1)
	return true
}
