package sctpllp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/pion/sctp"
)

// ErrPeerUnresponsive reports that nothing was received from the peer for
// PionConfig.DeadPeerTimeout, heartbeats included: the association was
// aborted as failed (the role of Association.Max.Retrans and of path
// heartbeats in RFC 9260 §8.1 and §8.3, which pion lacks).
var ErrPeerUnresponsive = errors.New("sctpllp: peer unresponsive")

// writeErrConn is the conn pion writes to. It records the first write
// error that is not the conn being closed or a deadline (both local
// decisions), and removes pion's malformed idle HEARTBEAT probes from
// outgoing packets (stripBareHeartbeats).
type writeErrConn struct {
	net.Conn
	err atomic.Pointer[error]
}

func (w *writeErrConn) Write(b []byte) (int, error) {
	if p, changed := stripBareHeartbeats(b); changed {
		if len(p) == 0 {
			return len(b), nil // the packet was only pion's malformed probe
		}
		if _, err := w.write(p); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return w.write(b)
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

func (l *liveConn) Read(b []byte) (int, error) {
	n, err := l.Conn.Read(b)
	if n > 0 {
		l.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// silence returns how long nothing has been received.
func (l *liveConn) silence() time.Duration {
	return time.Duration(time.Now().UnixNano() - l.last.Load())
}

// deadPeerProbe is the one-octet message sent on the sentinel stream to
// make a live peer answer. pion's own HEARTBEAT (Association.ActiveHeartbeat)
// cannot be used: v1.11.3 sends it without the Heartbeat Info parameter
// (chunkHeartbeat.Marshal is never called, the embedded header's marshal
// is), and pion drops such a HEARTBEAT unanswered. A DATA chunk is always
// acknowledged (RFC 9260 §6.2): the peer's SACK is the answer, and the
// peer's sentinel reader discards the octet.
var deadPeerProbe = []byte{0}

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
func (t *PionTransport) deadPeerLoop() {
	defer t.readers.Done()
	timeout := t.cfg.DeadPeerTimeout
	interval := max(timeout/4, time.Millisecond)
	tick := time.NewTicker(interval)
	defer tick.Stop()
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
				ErrPeerUnresponsive, quiet.Round(time.Millisecond), timeout))
			t.assoc.Abort("peer unresponsive")
			t.teardown()
			return
		case quiet >= interval:
			// The probe may wait behind a full congestion window; then the
			// outstanding DATA's retransmissions (RTO ≤ deadPeerRTOMax)
			// elicit the SACKs instead.
			_, _ = t.sentinel.WriteSCTP(deadPeerProbe, sctp.PayloadProtocolIdentifier(0))
		}
	}
}
