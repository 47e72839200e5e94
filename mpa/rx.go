package mpa

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

// rxBufLen is the receive buffer of a connection that carries data: one
// FPDU of any length with Markers, plus room for large reads.
const rxBufLen = maxWireLen + 64<<10

// rxIdleLen is the receive buffer Full Operation starts with: enough for
// small messages (a 64-octet ping-pong's FPDUs, Read Requests, Terminate,
// session and bench control messages), so that an idle stream holds 1 KiB
// instead of 130 (one TCP connection per DDP stream). fill grows it to
// rxBufLen for the first FPDU that does not fit or the first read that
// fills it (data arriving faster than it is read). A reader that parks
// (park.go) returns it, and takes a new one of rxIdleLen when it wakes.
const rxIdleLen = 1 << 10

// rxState is the receive side: one reusable buffer holding startup frames
// and FPDUs as read from TCP, the stream position for Markers, and the
// scratch buffer ULPDUs are gathered into when Markers are present.
type rxState struct {
	// size is len(buf), readable from any goroutine (tests, stats).
	size    atomic.Int64
	buf     []byte
	r, w    int    // buf[r:w] holds unread octets
	pos     uint64 // stream position of buf[r] in Full Operation
	scratch []byte
}

// init gives the state its startup buffer: n octets, enough for one
// startup frame (RFC 5044 §7.1.2: the peer has proved nothing yet, so a
// connection in startup holds no FPDU-sized buffer).
func (s *rxState) init(n int) {
	s.buf = make([]byte, n)
	s.size.Store(int64(n))
}

// grow replaces the startup buffer with Full Operation's first one,
// keeping what is buffered (an FPDU may follow the startup frame at once).
func (s *rxState) grow() { s.growTo(max(rxIdleLen, s.w-s.r)) }

// growTo replaces the buffer with one of n octets, keeping what is
// buffered at its start; a buffer of n or more stays.
func (s *rxState) growTo(n int) {
	if len(s.buf) >= n {
		return
	}
	var nb []byte
	if n == rxBufLen {
		nb = *rxBufs.Get().(*[]byte)
	} else {
		nb = make([]byte, n)
	}
	s.w = copy(nb, s.buf[s.r:s.w])
	s.r = 0
	s.buf = nb
	s.size.Store(int64(n))
}

func (s *rxState) buffered() []byte { return s.buf[s.r:s.w] }

// rxBufs holds the rxBufLen buffers of parked connections (park.go) for
// the next one that grows: a stream that idles between bursts does not
// make a new 130 KiB buffer for each.
var rxBufs = sync.Pool{New: func() any { b := make([]byte, rxBufLen); return &b }}

// fill reads from TCP until at least n octets are buffered (n <= rxBufLen).
// A buffer smaller than rxBufLen grows to it when n does not fit or a read
// fills it (rxIdleLen).
func (c *Conn) fill(n int) error {
	s := &c.rx
	if s.w-s.r >= n {
		return nil
	}
	if n > len(s.buf) {
		s.growTo(rxBufLen)
	}
	if len(s.buf)-s.r < n {
		s.w = copy(s.buf, s.buf[s.r:s.w])
		s.r = 0
	}
	for s.w-s.r < n {
		m, err := c.nc.Read(s.buf[s.w:])
		s.w += m
		if err != nil {
			if s.w-s.r >= n {
				return nil
			}
			return err
		}
		if s.w == len(s.buf) && len(s.buf) < rxBufLen {
			s.growTo(rxBufLen) // more is coming than this buffer reads at once
		}
	}
	return nil
}

// Start implements llp.Stream: a goroutine reads FPDUs, validates them
// (RFC 5044 §6: located by ULPDU_Length, CRC checked when negotiated,
// Markers checked and removed) and delivers each ULPDU to h in order. On
// an MPA error (CRC, Marker, ULPDU length) it calls h.HandleClosed with the
// *llp.Error and delivers nothing more (RFC 5044 §8), but leaves the TCP
// connection open so the ULP can still send its Terminate; it keeps
// reading and discarding until the peer closes or the Conn is torn down.
func (c *Conn) Start(h llp.Handler) {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		panic("mpa: Start called twice")
	}
	c.started = true
	c.mu.Unlock()
	go c.receive(h)
}

func (c *Conn) receive(h llp.Handler) {
	c.rxH = h
	c.receiveMore()
}

// receiveMore runs the receive loop until the connection ends, or parks
// (park.go): then it returns, and resume starts it again.
func (c *Conn) receiveMore() {
	h := c.rxH
	err, mpaErr, parked := c.deliver(h)
	if parked {
		return
	}
	defer close(c.rxDone)
	c.disarmIdle()
	// A Responder blocked in SendSegment waiting for the first FPDU
	// (RFC 5044 §7.1.2 rule 4) may now send, for example its Terminate.
	c.firstRxOnce.Do(func() { close(c.firstRx) })
	h.HandleClosed(err)
	if mpaErr {
		// RFC 5044 §8: after codes 2 and 3 MPA MUST NOT close the TCP
		// connection; deliver nothing more but keep draining, so that
		// unread data does not turn the ULP's later close into a reset.
		c.drain()
	}
	c.mu.Lock()
	c.rxEnded = true
	if c.closed {
		c.closeSocketLocked()
	}
	c.mu.Unlock()
}

// deliver runs the Full Operation receive loop. It returns the cause for
// HandleClosed and whether it is an MPA framing error, or parked when the
// reader parked (park.go) and the goroutine is to end without either.
func (c *Conn) deliver(h llp.Handler) (err error, mpaErr, parked bool) {
	s := &c.rx
	markers, crc := c.params.MarkersRx, c.params.CRC
	limit := c.cfg.maxRecvULPDU()
	for {
		ulen, err := peekULPDULength(s.buffered(), s.pos, markers)
		if err != nil {
			need := iwarpwire.MPAFPDUHeaderLen
			if markers && markerDue(s.pos) {
				need += iwarpwire.MPAMarkerLen
			}
			parked, err := c.fillOrPark(need)
			if parked {
				return nil, false, true
			}
			if err != nil {
				return c.readErr(err), false, false
			}
			continue
		}
		if ulen > limit {
			return newError(iwarp.Term.MPAMarker, fmt.Errorf("%w: ULPDU_Length %d > %d at stream offset %d (RFC 5044 §3)", ErrULPDUTooLarge, ulen, limit, s.pos)), true, false
		}
		if _, err := c.fillOrPark(wireLen(s.pos, ulen, markers)); err != nil {
			return c.readErr(err), false, false // never parks: the header is buffered
		}
		f, n, err := ParseFPDU(s.buffered(), s.pos, markers, crc, s.scratch)
		if err != nil {
			return err, true, false
		}
		s.r += n
		s.pos += uint64(n)
		c.recvSegs.Add(1)
		c.recvBytes.Add(uint64(len(f.ULPDU)))
		c.firstRxOnce.Do(func() { close(c.firstRx) })
		if c.rxBroken {
			continue // RFC 5041 §7.1: silently drop after a DDP error
		}
		if err := h.HandleSegment(f.ULPDU); err != nil {
			c.rxBroken = true // the handler refused a segment: drop the rest
		}
	}
}

// readErr maps the error that ended reading to the HandleClosed cause.
func (c *Conn) readErr(err error) error {
	partial := c.rx.w > c.rx.r
	c.mu.Lock()
	closed, aborted, sockErr := c.closed, c.aborted, c.sockErr
	c.mu.Unlock()
	if errors.Is(err, io.EOF) && sockErr == nil && !closed && !aborted && c.socketDead() {
		// Not a FIN: the connection died and a send drew its error, or
		// is drawing it now. The socket is dead, so that send does not
		// block; once txMu is free it has recorded the error.
		c.txMu.Lock()
		c.txMu.Unlock() //nolint:staticcheck // a barrier, not a section
		c.mu.Lock()
		sockErr = c.sockErr
		c.mu.Unlock()
		if sockErr == nil {
			sockErr = syscall.ECONNABORTED
		}
	}
	switch {
	case aborted:
		return fmt.Errorf("mpa: receive: %w", llp.ErrAborted)
	case errors.Is(err, io.EOF) && sockErr != nil:
		return c.ioError("receive", sockErr) // the error a send saw first, not a FIN
	case errors.Is(err, io.EOF) && !partial:
		return nil // the peer's FIN at an FPDU boundary: graceful (RFC 5044 §7.2)
	case errors.Is(err, io.EOF):
		return newError(iwarp.Term.MPAConnectionLost, fmt.Errorf("%w: FIN inside an FPDU: %w", ErrConnectionLost, io.ErrUnexpectedEOF))
	case closed && errors.Is(err, os.ErrDeadlineExceeded):
		return newError(iwarp.Term.MPAConnectionLost, fmt.Errorf("%w: peer did not close within the close timeout: %w", ErrConnectionLost, err))
	case closed && errors.Is(err, net.ErrClosed):
		return fmt.Errorf("mpa: receive: %w", llp.ErrClosed)
	}
	return c.ioError("receive", err)
}

// drain discards input until the peer closes or the Conn is torn down.
func (c *Conn) drain() {
	for {
		if _, err := c.nc.Read(c.rx.buf); err != nil {
			return
		}
	}
}
