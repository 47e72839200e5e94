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
// ends. pion offers only a blocking read, so a receiving stream needs a
// goroutine; one per idle stream would cost two goroutine stacks per DDP
// stream. A reader ends after readerIdle without a message, and the
// transport, which sees every packet before pion does (writeErrConn.Read),
// starts another for the stream's next DATA chunk once pion has handled
// the packet (wakeSniffed); restarting costs one goroutine and one pion
// read deadline.
var readerIdle = 100 * time.Millisecond // a variable for the tests only

// testAfterSniff, when set by a test, runs between a packet's sniff and
// pion's handling of it: a pion slowed down by a loaded host.
var testAfterSniff atomic.Pointer[func()]

// testPark, when set by a test, runs in a parking reader just before it
// clears running (afterClear false) and again between that and its
// re-reading of pending (afterClear true): the two windows in which a
// wake races the parking (readerState).
var testPark atomic.Pointer[func(ps *pionStream, afterClear bool)]

// readerState is what decides whether a stream has a reader: running (a
// reader exists or is starting; cleared by the reader when it parks, kept
// after the stream ended), pending (pion queued something since the
// reader's period began; set by wake) and resetting (the peer asked to
// reset the stream, RFC 6525 §5.2.2; the reader stays until io.EOF). A
// reader parks by clearing running and then reading pending; a wake sets
// pending and then tries to set running. Both are sequentially consistent,
// so a queued message gets exactly one reader.
type readerState struct {
	running   atomic.Bool
	pending   atomic.Bool
	resetting atomic.Bool
}

// addReaderLocked counts a reader about to start, unless pion's
// association has closed (its streams then have nothing more to read).
// mu is held.
func (t *transport) addReaderLocked() bool {
	if t.noReaders {
		return false
	}
	t.readers.Add(1)
	return true
}

// wake makes sure ps has a reader: pion has queued something for it.
func (t *transport) wake(ps *pionStream) {
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
func (t *transport) sniff(p []byte) {
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
func (t *transport) sniffReset(r wire.ReconfigRequest) {
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
func (t *transport) wakeSniffed() {
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
func (t *transport) readLoop(ps *pionStream) {
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
func (t *transport) readPeriod(ps *pionStream) (got int, ended bool) {
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
