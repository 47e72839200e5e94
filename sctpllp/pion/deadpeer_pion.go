package pion

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// writeErrConn is the conn pion writes to. It records the first write
// error that is not the conn being closed or a deadline (both local
// decisions), removes pion's malformed idle HEARTBEAT probes from outgoing
// packets (stripBareHeartbeats), and learns the association's common
// header (ports and the peer's Verification Tag) from pion's packets, for
// the dead-peer HEARTBEATs (probe).
type writeErrConn struct {
	net.Conn
	err atomic.Pointer[error]
	hdr atomic.Pointer[wire.Header]
	ali aliState   // the Adaptation Layer Indication (pion_ali.go)
	rtx rtxCounter // retransmitted DATA chunks (stats.go)
	// rx, once the transport exists, sees each packet before pion does
	// and, when pion asks for the next, wakes the readers of the streams
	// it carried chunks for (reader.go).
	rx atomic.Pointer[transport]
}

// Read implements net.Conn: pion's next packet, noting the peer's
// Adaptation Layer Indication in an INIT or INIT ACK. The transport is
// looked up again once the packet is there: pion asks for the first packet
// after the handshake before the transport exists, and that packet may be
// the peer's late answer on a stream whose reader has parked.
func (w *writeErrConn) Read(b []byte) (int, error) {
	if t := w.rx.Load(); t != nil {
		t.wakeSniffed() // pion has handled the packet before: wake its streams' readers
	}
	n, err := w.Conn.Read(b)
	t := w.rx.Load()
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		// The ICMP port unreachable of a connected UDP socket (RFC 6951
		// §5.5): nothing listens there, or the peer process is gone. pion
		// reports only that its association closed.
		w.err.CompareAndSwap(nil, &err)
	}
	if n > 0 {
		w.ali.incoming(b[:n])
		if t != nil {
			t.sniff(b[:n])
			if h := testAfterSniff.Load(); h != nil {
				(*h)() // tests: pion slow to get to the packet
			}
		}
	}
	return n, err
}

// observe learns the common header from an outgoing packet. An INIT
// carries Verification Tag 0 (RFC 9260 §8.5.1); every other packet of the
// association carries the peer's tag. Nothing is allocated unless the
// header changed.
func (w *writeErrConn) observe(b []byte) {
	if len(b) <= wire.HeaderLen || wire.ChunkType(b[wire.HeaderLen]) == wire.ChunkInit {
		return
	}
	h, err := wire.ParseHeader(b)
	if err != nil || h.VerificationTag == 0 {
		return
	}
	if cur := w.hdr.Load(); cur != nil && *cur == h {
		return
	}
	w.hdr.Store(&h)
}

// probe sends one HEARTBEAT chunk with a Heartbeat Info parameter (RFC
// 9260 §3.3.5, §8.3) that a live peer returns in a HEARTBEAT ACK. It sends
// nothing before the association's header is known.
func (w *writeErrConn) probe(nonce uint64) {
	h := w.hdr.Load()
	if h == nil {
		return
	}
	var buf [wire.HeaderLen + deadPeerChunkLen]byte
	_, _ = w.write(appendDeadPeerProbe(buf[:0], *h, false, nonce))
}

// The dead-peer HEARTBEAT: a chunk header, then the Heartbeat Info
// parameter (type 1) holding deadPeerMagic and a nonce. The information is
// opaque to the peer, which returns it unchanged (RFC 9260 §8.3); its
// length differs from pion's own 8-octet RTT probe, which pion's
// HEARTBEAT ACK handler would otherwise take for a timestamp.
const (
	deadPeerInfoLen  = 16
	deadPeerChunkLen = wire.ChunkHeaderLen + 4 + deadPeerInfoLen
)

var deadPeerMagic = [8]byte{'s', 'r', 'd', 'e', 'a', 'd', 'p', 'r'}

// appendDeadPeerProbe appends the whole probe packet (a HEARTBEAT, or a
// HEARTBEAT ACK in tests) under the association's common header h.
func appendDeadPeerProbe(b []byte, h wire.Header, ack bool, nonce uint64) []byte {
	start := len(b)
	var info [deadPeerInfoLen]byte
	copy(info[:], deadPeerMagic[:])
	binary.BigEndian.PutUint64(info[8:], nonce)
	b = wire.AppendHeader(b, h)
	hb := wire.Heartbeat{Ack: ack, Info: info[:]}
	b = hb.Append(b)
	wire.SetChecksum(b[start:])
	return b
}

// isDeadPeerAck reports whether p is a packet holding only the HEARTBEAT
// ACK of a dead-peer probe: such packets are consumed below pion. A peer
// that bundles the ACK with other chunks has it passed to pion, which
// ignores a Heartbeat Info of this length.
func isDeadPeerAck(p []byte) bool {
	if len(p) != wire.HeaderLen+deadPeerChunkLen {
		return false
	}
	c, _, err := wire.ParseChunk(p[wire.HeaderLen:])
	if err != nil || c.Type != wire.ChunkHeartbeatAck {
		return false
	}
	hb, err := wire.ParseHeartbeat(c)
	return err == nil && len(hb.Info) == deadPeerInfoLen && bytes.Equal(hb.Info[:8], deadPeerMagic[:])
}

// Write implements net.Conn: one packet from pion, with its malformed
// HEARTBEATs removed and the Adaptation Layer Indication added to an INIT
// or INIT ACK.
func (w *writeErrConn) Write(b []byte) (int, error) {
	w.observe(b)
	w.rtx.observe(b)
	p := b
	if q, changed := stripBareHeartbeats(p); changed {
		if len(q) == 0 {
			return len(b), nil // the packet was only pion's malformed probe
		}
		p = q
	}
	p = w.ali.outgoing(p)
	if len(p) == len(b) && &p[0] == &b[0] {
		return w.write(b)
	}
	if _, err := w.write(p); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w *writeErrConn) write(b []byte) (int, error) {
	n, err := w.Conn.Write(b)
	if err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
		w.err.CompareAndSwap(nil, &err)
	}
	return n, err
}

func (w *writeErrConn) failed() error {
	if p := w.err.Load(); p != nil {
		return *p
	}
	return nil
}

// liveConn records when the last packet arrived from the peer: pion reads
// every packet through it.
type liveConn struct {
	net.Conn
	last atomic.Int64 // UnixNano of the last successful Read
}

func newLiveConn(c net.Conn) *liveConn {
	l := &liveConn{Conn: c}
	l.last.Store(time.Now().UnixNano())
	return l
}

// Read returns the next packet for pion. Every packet counts as a sign of
// life; the HEARTBEAT ACKs of the dead-peer probes are consumed here.
func (l *liveConn) Read(b []byte) (int, error) {
	for {
		n, err := l.Conn.Read(b)
		if n > 0 {
			l.last.Store(time.Now().UnixNano())
		}
		if err == nil && isDeadPeerAck(b[:n]) {
			continue
		}
		return n, err
	}
}

// silence returns how long nothing has been received.
func (l *liveConn) silence() time.Duration {
	return time.Duration(time.Now().UnixNano() - l.last.Load())
}

// deadPeerRTOMax caps pion's retransmission timeout when DeadPeerTimeout is
// set, so that outstanding DATA is retransmitted (and a live peer's SACK
// elicited) at least three times per DeadPeerTimeout even after backoff:
// otherwise a live peer behind a few seconds of loss could stay silent past
// the timeout only because pion backed off to its 60 s ceiling.
func deadPeerRTOMax(timeout time.Duration) float64 {
	return float64(max(timeout/3, 10*time.Millisecond).Milliseconds())
}

// deadPeerLoop probes the peer whenever it has been silent for a quarter
// of DeadPeerTimeout and aborts the association after DeadPeerTimeout of
// silence.
func (t *transport) deadPeerLoop() {
	defer t.readers.Done()
	timeout := t.cfg.DeadPeerTimeout
	interval := max(timeout/4, time.Millisecond)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var nonce uint64
	for {
		select {
		case <-t.closed:
			return
		case <-tick.C:
		}
		quiet := t.live.silence()
		switch {
		case quiet >= timeout:
			t.setCause(fmt.Errorf("%w: nothing received for %v (DeadPeerTimeout %v)",
				backend.ErrPeerUnresponsive, quiet.Round(time.Millisecond), timeout))
			t.assoc.Abort("peer unresponsive")
			t.teardown()
			return
		case quiet >= interval:
			// A HEARTBEAT, never DATA: every DATA chunk of a DDP
			// association is a DDP segment or session control (RFC 5043
			// §5.1). pion's own HEARTBEAT cannot serve: v1.11.3 sends it
			// without the Heartbeat Info parameter (stripBareHeartbeats).
			// Outstanding DATA's retransmissions (RTO ≤ deadPeerRTOMax)
			// elicit SACKs as well.
			nonce++
			t.wconn.probe(nonce)
		}
	}
}
