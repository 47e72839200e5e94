package pion

import (
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/pion/sctp"

	"github.com/sctp-rdma/sctp-rdma/internal/bufpool"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// readerIdle is how long a stream's reader waits for a message before it
// ends. pion has no callback for a readable stream, only a blocking read,
// so a stream that receives needs a goroutine in ReadSCTP; one per idle
// stream would be two goroutine stacks per DDP stream (one at each end,
// 9 KiB of the 14.5 KiB an idle stream cost in the harness on
// 2026-11-28). A reader therefore ends after readerIdle without a
// message, and the transport, which sees every packet before pion does
// (writeErrConn.Read), starts another for the stream's next DATA chunk,
// once pion has handled the packet (wakeSniffed).
// Restarting costs a goroutine and one pion read deadline (pion runs a
// goroutine per deadline, only while it is armed): nothing beside a
// gap of 100 ms.
var readerIdle = 100 * time.Millisecond // a variable for the tests only

// testAfterSniff, when set by a test, runs between a packet's sniff and
// pion's handling of it: a pion slowed down by a loaded host.
var testAfterSniff atomic.Pointer[func()]

// testPark, when set by a test, runs in a parking reader just before it
// clears running (afterClear false) and again between that and its
// re-reading of pending (afterClear true): the two windows in which a
// wake races the parking (readerState).
var testPark atomic.Pointer[func(ps *pionStream, afterClear bool)]

// readerState is what decides whether a stream has a reader.
//
//	running  a reader goroutine exists (or is being started); set by
//	         whoever starts one (register, wake), cleared by the reader
//	         when it parks. It stays set after the stream ended: an
//	         ended stream gets no reader again.
//	pending  pion has queued something for the stream since the
//	         reader's period began: set by wake (from wakeSniffed, after
//	         pion handled the packet), cleared by the reader at the start
//	         of each period.
//	resetting  the peer asked to reset the stream (RFC 6525 §5.2.2);
//	         its reader stays until pion reports the end (io.EOF),
//	         which may come long after the request (pion answers "in
//	         progress" while DATA before the reset is missing).
//
// A reader parks by clearing running and then reading pending; a wake
// meanwhile sets pending and then tries to set running. One of the two
// sees the other's write (both are sequentially consistent), so the
// queued message gets exactly one reader: the parking one carries on, or
// a new one starts. A message queued before the reader's period ended is
// read in it (pion's read returns queued data before a deadline error).
type readerState struct {
	running   atomic.Bool
	pending   atomic.Bool
	resetting atomic.Bool
}

// addReaderLocked counts a reader about to start, unless pion's
// association has closed (its streams then have nothing more to read).
// mu is held.
func (t *Transport) addReaderLocked() bool {
	if t.noReaders {
		return false
	}
	t.readers.Add(1)
	return true
}

// wake makes sure ps has a reader: pion has queued something for it.
func (t *Transport) wake(ps *pionStream) {
	ps.pending.Store(true)
	if ps.running.Load() || !ps.running.CompareAndSwap(false, true) {
		return
	}
	t.mu.Lock()
	started := t.addReaderLocked()
	t.mu.Unlock()
	if started {
		go t.readLoop(ps)
	}
}

// sniff looks at a packet before pion does and notes the streams whose
// readers must run once pion has handled it (wakeSniffed): each DATA
// chunk's stream, and the streams an Outgoing SSN Reset Request (RFC 6525
// §4.1) resets, all of them when it lists none; those stay awake until
// pion reports the reset. It runs on pion's read goroutine only, as does
// wakeSniffed. The packet's checksum is not verified here (pion does that
// next): a forged packet can at most start one reader per stream for
// readerIdle. It allocates nothing once its lists have grown.
func (t *Transport) sniff(p []byte) {
	if len(p) <= wire.HeaderLen {
		return
	}
	it := wire.NewChunkIter(p[wire.HeaderLen:])
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		switch c.Type {
		case wire.ChunkData:
			d, err := wire.ParseData(c)
			if err != nil {
				continue
			}
			if n := len(t.sniffed); n == 0 || t.sniffed[n-1] != d.StreamID {
				t.sniffed = append(t.sniffed, d.StreamID)
			}
		case wire.ChunkReconfig:
			_ = wire.ParseReconfig(c, t.sniffReset, nil)
		}
	}
}

// sniffReset notes the streams an Outgoing SSN Reset Request resets: its
// value after the request sequence number is the Response Sequence
// Number, the Sender's Last Assigned TSN and the stream numbers, none
// meaning every stream (RFC 6525 §4.1).
func (t *Transport) sniffReset(r wire.ReconfigRequest) {
	if r.Type != wire.ParamOutgoingSSNReset || len(r.Rest) < 8 {
		return
	}
	ids := r.Rest[8:]
	if len(ids) < 2 {
		t.resetAll = true
	}
	for ; len(ids) >= 2; ids = ids[2:] {
		t.resetIDs = append(t.resetIDs, binary.BigEndian.Uint16(ids))
	}
}

// wakeSniffed wakes the readers of the streams sniff noted. pion's read
// loop handles a packet completely (its messages queued on their streams,
// a reset applied) before it reads the next, so when it asks for the next
// packet, what the last one brought is there to be read: a reader woken
// now cannot park before it has it, however long pion took to get to
// the packet (waking at sniff time instead lost messages under load: the
// reader ran its period and parked before pion had queued them).
func (t *Transport) wakeSniffed() {
	if len(t.sniffed) == 0 && len(t.resetIDs) == 0 && !t.resetAll {
		return
	}
	var all []*pionStream
	t.mu.RLock()
	for i, sid := range t.sniffed {
		t.woken = append(t.woken, t.streams[sid])
		t.sniffed[i] = 0
	}
	n := len(t.woken)
	for _, sid := range t.resetIDs {
		t.woken = append(t.woken, t.streams[sid])
	}
	if t.resetAll {
		for _, ps := range t.streams {
			all = append(all, ps)
		}
	}
	t.mu.RUnlock()
	t.sniffed, t.resetIDs, t.resetAll = t.sniffed[:0], t.resetIDs[:0], false
	for i, ps := range t.woken {
		if ps == nil {
			continue // not adopted yet: acceptLoop starts its reader
		}
		if i >= n {
			ps.resetting.Store(true)
		}
		t.wake(ps)
	}
	for _, ps := range all {
		ps.resetting.Store(true)
		t.wake(ps)
	}
	clear(t.woken)
	t.woken = t.woken[:0]
}

// readLoop delivers the messages of ps in periods of readerIdle and ends
// after a period without one (parks), or when the stream ends.
func (t *Transport) readLoop(ps *pionStream) {
	defer t.readers.Done()
	for {
		ps.pending.Store(false)
		_ = ps.s.SetReadDeadline(time.Now().Add(readerIdle))
		got, ended := t.readPeriod(ps)
		if ended {
			return
		}
		if got > 0 || ps.resetting.Load() {
			continue
		}
		_ = ps.s.SetReadDeadline(time.Time{}) // ends pion's deadline goroutine
		hook := testPark.Load()
		if hook != nil {
			(*hook)(ps, false)
		}
		ps.running.Store(false)
		if hook != nil {
			(*hook)(ps, true)
		}
		if !ps.pending.Load() || !ps.running.CompareAndSwap(false, true) {
			return // parked, or a new reader took over
		}
		// A chunk arrived while parking: carry on.
	}
}

// readPeriod delivers messages until the read deadline passes and reports
// how many; ended is true when the stream ended (reset by the peer, or the
// association closed).
func (t *Transport) readPeriod(ps *pionStream) (got int, ended bool) {
	for {
		// A zero-length read reports the size of the next message without
		// consuming it (io.ErrShortBuffer); an idle stream holds no buffer.
		n, ppid, err := ps.s.ReadSCTP(nil)
		var bp *[]byte
		for errors.Is(err, io.ErrShortBuffer) {
			if bp != nil {
				bufpool.Put(bp)
			}
			bp = bufpool.Get(n)
			n, ppid, err = ps.s.ReadSCTP(*bp)
		}
		if err != nil {
			if bp != nil {
				bufpool.Put(bp)
			}
			if errors.Is(err, sctp.ErrReadDeadlineExceeded) {
				return got, false
			}
			ps.eof.Store(true)
			t.forgetIfDone(ps.sid, ps)
			return got, true
		}
		got++
		var b []byte
		if bp != nil {
			b = (*bp)[:n]
		}
		if !t.closing.Load() {
			t.fn(ps.sid, uint32(ppid), b)
		}
		if bp != nil {
			bufpool.Put(bp)
		}
	}
}
