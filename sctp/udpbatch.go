package sctp

import (
	"net"
	"net/netip"
)

// txBatch gathers the packets that one transmission sends to one UDP peer
// and hands each run of equal-size packets to the kernel with one system
// call (UDP segmentation offload, udpoffload_linux.go), instead of one
// sendmsg per packet. Packets are copied into a pooled buffer, held only
// from the first packet of a transmission to its flush, so an idle
// association holds none. Used with mu held.
type txBatch struct {
	// To a local destination (localDestination), where runs are not sent, the
	// batch sends up to mmsgMax packets of any sizes with one sendmmsg
	// instead (mm): a 64 KiB message over loopback, two DDP segments, is a
	// full datagram and a short one, which then cost one system call, not
	// two. A packet
	// whose memory stays unchanged until the flush (a chunk sent from its own
	// buffer) is queued by reference; the others are copied.

	out func([]byte) error                 // sends one packet
	gso func(pkts [][]byte, seg int) error // sends a run of packets of seg octets; nil: mm
	mm  func(pkts [][]byte) error          // sends packets with one sendmmsg
	// pkts are the packets queued, each where it lies: a stable one in
	// its own memory, the others copied into buf.
	pkts [][]byte

	buf   *[]byte // copies of the packets that are not stable; nil when none
	n     int     // packets queued
	bytes int     // their octets
	seg   int     // size of the first packet: all but the last have it
	short bool    // the last packet is shorter than seg: the run is over
	off   bool    // offload failed once: packets go one by one

	offloaded uint64 // system calls that carried more than one packet
}

// newTxBatch returns a batch for packets to to over conn (to zero for a
// connected conn); out sends one packet.
func newTxBatch(conn *net.UDPConn, to netip.AddrPort, out func([]byte) error) *txBatch {
	w := newGSOWriter(conn, to)
	if w == nil {
		return newMMsgBatch(conn, to, out)
	}
	return &txBatch{out: out, gso: w.writeRun, pkts: make([][]byte, 0, gsoMaxSegments)}
}

// newBatch returns the batch of an association with peer over conn (to
// zero for a connected conn): runs of packets (UDP_SEGMENT) where the
// kernel has it (gso) and the peer is not local (or local is set, for
// tests), several packets per sendmmsg otherwise; nil where neither
// exists.
func newBatch(conn *net.UDPConn, to netip.AddrPort, peer netip.Addr, out func([]byte) error, gso, local bool) *txBatch {
	if gso && (local || !localDestination(peer)) {
		return newTxBatch(conn, to, out)
	}
	return newMMsgBatch(conn, to, out)
}

// newMMsgBatch returns a batch that sends several packets with one
// sendmmsg to to over conn (to zero for a connected conn), or nil where
// the system has no sendmmsg.
func newMMsgBatch(conn *net.UDPConn, to netip.AddrPort, out func([]byte) error) *txBatch {
	w := newMMsgWriter(conn, to)
	if w == nil {
		return nil
	}
	return &txBatch{out: out, mm: w.writeMMsg, pkts: make([][]byte, 0, mmsgMax)}
}

// corkLimit is what WriteMsgMore holds at most before it transmits: what
// the batch sends with one system call.
func (t *txBatch) corkLimit() int {
	if t.gso == nil {
		return mmsgMaxBytes
	}
	return gsoMaxBytes
}

// addMM queues p for one sendmmsg, by reference if stable.
func (t *txBatch) addMM(p []byte, stable bool) error {
	var err error
	if len(t.pkts) == mmsgMax {
		err = t.flush()
	}
	if !stable && t.buf != nil && cap(*t.buf)-len(*t.buf) < len(p) {
		if e := t.flush(); e != nil && err == nil {
			err = e
		}
	}
	t.queue(p, stable)
	return err
}

// queue appends p to the packets queued, copied into buf unless stable;
// buf has room (the caller flushed if not).
func (t *txBatch) queue(p []byte, stable bool) {
	if !stable {
		if t.buf == nil {
			t.buf = getBuf(largeBuf)
			*t.buf = (*t.buf)[:0]
		}
		start := len(*t.buf)
		*t.buf = append(*t.buf, p...) // within capacity: earlier packets stay put
		p = (*t.buf)[start:]
	}
	t.pkts = append(t.pkts, p)
	t.n++
	t.bytes += len(p)
}

// add queues packet p, first sending what is queued if p cannot join
// its run: a run is packets of one size but the last, of at most
// gsoMaxSegments packets and gsoMaxBytes octets, sent as one vector: a
// stable packet (a chunk in its own buffer) where it lies, the others
// copied (a run's copies fit one buffer). A packet too large to share a
// run goes out at once, uncopied. Without runs (mm), see addMM. It
// returns the error of a send it made.
func (t *txBatch) add(p []byte, stable bool) error {
	if t.gso == nil {
		return t.addMM(p, stable)
	}
	var err error
	if t.n > 0 && (t.short || len(p) > t.seg || t.bytes+len(p) > gsoMaxBytes || t.n == gsoMaxSegments) {
		err = t.flush()
	}
	if t.n == 0 && 2*len(p) > gsoMaxBytes {
		if e := t.out(p); e != nil {
			err = e
		}
		return err
	}
	if t.n == 0 {
		t.seg = len(p)
	} else if len(p) < t.seg {
		t.short = true
	}
	t.queue(p, stable)
	return err
}

// flush sends the queued packets: one alone as it is, a run with one
// system call, or, once the kernel or device has refused offload, one by
// one. It returns the first send error.
func (t *txBatch) flush() error {
	if t.n == 0 {
		return nil
	}
	var err error
	switch {
	case t.n == 1:
		err = t.out(t.pkts[0])
	case t.gso == nil:
		if err = t.mm(t.pkts); err == nil {
			t.offloaded++
		}
	case t.off:
		err = t.each(t.pkts)
	default:
		err = t.gso(t.pkts, t.seg)
		switch {
		case err != nil && offloadUnsupported(err):
			t.off = true
			err = t.each(t.pkts)
		case err == nil:
			t.offloaded++
		}
	}
	clear(t.pkts)
	t.pkts, t.n, t.bytes, t.short = t.pkts[:0], 0, 0, false
	if t.buf != nil {
		putBuf(t.buf)
		t.buf = nil
	}
	return err
}

// each sends pkts one by one.
func (t *txBatch) each(pkts [][]byte) error {
	var first error
	for _, p := range pkts {
		if err := t.out(p); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// udpReader reads one datagram at a time, or, with UDP_GRO on, what the
// kernel coalesced of one peer's datagrams; with pktinfo on, it also
// learns the address each read was sent to.
type udpReader struct {
	conn    net.Conn
	uc      *net.UDPConn // a UDP socket: its reads say where from
	gro     bool
	pktinfo bool
	oob     []byte
	inq     *inqProbe // with gro: whether another read waits (deferSACK)
	waited  bool      // the last read left its SACK to the next
}

// newUDPReader reads conn; offload asks for UDP_GRO where conn is a UDP
// socket and the kernel has it, dst for each read's destination address
// (a wildcard socket's, multihome.go).
func newUDPReader(conn net.Conn, offload, dst bool) *udpReader {
	r := &udpReader{conn: conn}
	if uc, ok := conn.(*net.UDPConn); ok {
		r.uc = uc
		r.gro = offload && enableGRO(uc)
		r.pktinfo = dst && enablePktinfo(uc)
		if r.gro || r.pktinfo {
			r.oob = make([]byte, groOOBLen+pktinfoOOBLen)
		}
		if r.gro {
			r.inq = newInqProbe(uc)
		}
	}
	return r
}

// read reads into b: n octets from from (zero for a conn that is not a
// UDP socket), sent to to (zero without pktinfo); seg, if not zero, is
// the size of each coalesced datagram but the last.
func (r *udpReader) read(b []byte) (n, seg int, from netip.AddrPort, to netip.Addr, err error) {
	switch {
	case r.oob != nil:
		var oobn int
		n, oobn, _, from, err = r.uc.ReadMsgUDPAddrPort(b, r.oob)
		if err == nil {
			if r.gro {
				seg = groSegment(r.oob[:oobn])
			}
			if r.pktinfo {
				to = pktinfoDst(r.oob[:oobn])
			}
		}
	case r.uc != nil:
		n, from, err = r.uc.ReadFromUDPAddrPort(b)
	default:
		n, err = r.conn.Read(b)
	}
	return n, seg, from, to, err
}

// deferSACK reports whether the coalesced read just made may leave its
// SACK to the next read, as a listener's worker does: another one waits
// in the socket already, and the last read did not leave its own (one
// SACK per two reads under load, RFC 9260 §6.2; the delayed-ack timer is
// armed meanwhile). A read that is not coalesced calls sackSent.
func (r *udpReader) deferSACK() bool {
	r.waited = !r.waited && r.inq.queued()
	return r.waited
}

// sackSent notes a read whose SACK deferSACK did not defer.
func (r *udpReader) sackSent() { r.waited = false }

// localDestination reports whether packets to addr are delivered by this
// host's own stack: a loopback address or an address of one of its
// interfaces. Runs of packets (UDP_SEGMENT) are not sent there. Over an
// interface a run is cut into datagrams before it leaves, but a run to a
// local address is delivered whole, which Linux 6.1's udp_queue_rcv_skb
// cannot take on its own SCTP-over-UDP tunnel socket (RFC 6951; see
// docs/sctp-native.md). When the interfaces cannot be listed: yes.
func localDestination(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() || addr.IsUnspecified() {
		return true
	}
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	for _, ia := range ifas {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap() == addr {
				return true
			}
		}
	}
	return false
}
