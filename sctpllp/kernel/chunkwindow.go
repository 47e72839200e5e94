package kernel

import "sync"

// chunkWindow enforces the RFC 5043 §10 bound for a backend that can tell
// when every DATA chunk it handed to SCTP has been acknowledged, but not
// when one particular chunk has: "the sending DDP must simply refrain from
// sending more than 32767 Data Chunks for a single stream without
// acknowledgment".
type chunkWindow struct {
	// It counts, per stream, the chunks sent since the association was last
	// seen idle (nothing queued, nothing unacknowledged). A stream whose count
	// reached the limit may send again only once an idle probe succeeds, which
	// resets every stream's count: all chunks counted so far are acknowledged
	// then. The count is therefore never below the true number of
	// unacknowledged chunks of the stream, and the bound holds whatever the
	// order in which SCTP transmits or acknowledges them.
	//
	// Liveness: while one stream waits for the idle point, segments of every
	// other stream wait too (draining), so that the association does become
	// idle even when other streams send continuously; the stall costs about
	// one round trip per 32765 chunks of a stream.
	//
	// The caller serialises admit and sent with the lock it holds around the
	// send itself (kernelTransport.wmu), so that no chunk is in the middle of
	// being handed to SCTP while the idle probe runs.

	limit  uint16
	counts []uint16 // per stream, chunks since the last idle probe
	// draining is set while a stream waits for the idle point; every
	// stream's segments wait with it.
	draining bool

	mu   sync.Mutex
	wake chan struct{} // closed and replaced by signal
}

// newChunkWindow returns a window of limit chunks per stream for streams
// stream identifiers.
func newChunkWindow(streams int, limit uint16) *chunkWindow {
	return &chunkWindow{limit: limit, counts: make([]uint16, streams), wake: make(chan struct{})}
}

// admit reports whether one more chunk may be sent on sid now. When sid's
// count is at the limit, or another stream's is (draining), it calls idle;
// if idle reports that every chunk sent so far is acknowledged, the counts
// restart from zero and admit reports true; otherwise the window drains.
// An error from idle is returned as is.
func (w *chunkWindow) admit(sid uint16, idle func() (bool, error)) (bool, error) {
	if w.counts[sid] < w.limit && !w.draining {
		return true, nil
	}
	ok, err := idle()
	if err != nil {
		return false, err
	}
	if !ok {
		w.draining = true
		return false, nil
	}
	clear(w.counts)
	w.draining = false
	return true, nil
}

// sent records one chunk handed to SCTP on sid.
func (w *chunkWindow) sent(sid uint16) {
	if w.counts[sid] < w.limit {
		w.counts[sid]++
	}
}

// outstanding returns sid's count (tests and diagnostics).
func (w *chunkWindow) outstanding(sid uint16) int { return int(w.counts[sid]) }

// waitCh returns a channel closed by the next signal. Take it before
// releasing the send lock, then wait on it.
func (w *chunkWindow) waitCh() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wake
}

// signal wakes every writer waiting for the window (the association became
// idle, or it ended).
func (w *chunkWindow) signal() {
	w.mu.Lock()
	close(w.wake)
	w.wake = make(chan struct{})
	w.mu.Unlock()
}
