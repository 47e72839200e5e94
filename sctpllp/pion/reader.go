package pion

import (
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/pion/sctp"

	"github.com/sctp-rdma/sctp-rdma/internal/bufpool"
	"github.com/sctp-rdma/sctp-rdma/sctp/wire"
)

// readerIdle is how long a stream's reader waits for a message before it
// ends. pion has no callback for a readable stream, only a blocking read,
// so a stream that receives needs a goroutine in ReadSCTP; one per idle
// stream would be two goroutine stacks per DDP stream (one at each end,
// 9 KiB of the 14.5 KiB an idle stream cost in the harness on
// 2026-11-28). A reader therefore ends after readerIdle without a
// message, and the transport, which sees every packet before pion does
// (writeErrConn.Read), starts another at the stream's next DATA chunk.
// Restarting costs a goroutine and one pion read deadline (pion runs a
// goroutine per deadline, only while it is armed): nothing beside a
// gap of 100 ms.
var readerIdle = 100 * time.Millisecond // a variable for the tests only

// readerState is what decides whether a stream has a reader.
//
//	running  a reader goroutine exists (or is being started); set by
//	         whoever starts one (register, wake), cleared by the reader
//	         when it parks. It stays set after the stream ended: an
//	         ended stream gets no reader again.
//	pending  a chunk for the stream was seen since the reader's period
//	         began: set by sniff before pion processes the packet,
//	         cleared by the reader at the start of each period.
//	resetting  the peer asked to reset the stream (RFC 6525 §5.2.2);
//	         its reader stays until pion reports the end (io.EOF),
//	         which may come long after the request (pion answers "in
//	         progress" while DATA before the reset is missing).
//
// A reader parks by clearing running and then reading pending; a chunk
// arriving meanwhile sets pending and then tries to set running. One of
// the two sees the other's write (both are sequentially consistent), so
// the chunk's message gets exactly one reader: the parking one carries on,
// or a new one starts.
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

// wake makes sure ps has a reader: a chunk for it is on its way to pion.
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

// sniff looks at a packet before pion does: each DATA chunk wakes its
// stream's reader, and an Outgoing SSN Reset Request (RFC 6525 §4.1)
// wakes the readers of the streams it resets (all of them when it lists
// none), which stay until pion reports the reset. The packet's checksum is
// not verified here (pion does that next): a forged packet can at most
// start one reader per stream for readerIdle. It allocates nothing for a
// packet of DATA chunks.
func (t *Transport) sniff(p []byte) {
	if len(p) <= wire.HeaderLen {
		return
	}
	it := wire.NewChunkIter(p[wire.HeaderLen:])
	last := -1
	for c, ok := it.Next(); ok; c, ok = it.Next() {
		switch c.Type {
		case wire.ChunkData:
			d, err := wire.ParseData(c)
			if err != nil || int(d.StreamID) == last {
				continue
			}
			last = int(d.StreamID)
			t.mu.RLock()
			ps := t.streams[d.StreamID]
			t.mu.RUnlock()
			if ps != nil {
				t.wake(ps)
			}
		case wire.ChunkReconfig:
			_ = wire.ParseReconfig(c, t.sniffReset, nil)
		}
	}
}

// sniffReset wakes the readers of the streams an Outgoing SSN Reset
// Request resets: its value after the request sequence number is the
// Response Sequence Number, the Sender's Last Assigned TSN and the stream
// numbers, none meaning every stream (RFC 6525 §4.1).
func (t *Transport) sniffReset(r wire.ReconfigRequest) {
	if r.Type != wire.ParamOutgoingSSNReset || len(r.Rest) < 8 {
		return
	}
	ids := r.Rest[8:]
	var reset []*pionStream
	t.mu.RLock()
	if len(ids) < 2 {
		for _, ps := range t.streams {
			reset = append(reset, ps)
		}
	}
	for ; len(ids) >= 2; ids = ids[2:] {
		if ps := t.streams[binary.BigEndian.Uint16(ids)]; ps != nil {
			reset = append(reset, ps)
		}
	}
	t.mu.RUnlock()
	for _, ps := range reset {
		ps.resetting.Store(true)
		t.wake(ps)
	}
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
		ps.running.Store(false)
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
