package mpa

import (
	"errors"
	"os"
	"sync/atomic"
	"time"
)

// defaultReaderIdle is Config.ReaderIdle's default.
const defaultReaderIdle = 100 * time.Millisecond

// errNoPoller: this system has no poller for parked connections.
var errNoPoller = errors.New("mpa: no idle poller")

// A connection's receive goroutine parks when nothing has arrived for
// Config.ReaderIdle at an FPDU boundary: it returns its receive buffer,
// registers the socket with the process's idle poller (park_linux.go) and
// ends; the poller starts it again when the socket is readable (data, the
// peer's FIN, a reset), and Close and Abort start it themselves. An idle
// stream then holds no goroutine and no buffer at its end, where a
// blocking read held a goroutine stack (about 3.5 KiB at each end) and
// a 1 KiB buffer. Only a plain TCP socket parks (the poller needs its
// descriptor); a connection inside TLS keeps its reader.
//
// State, under mu: parked (with parkTok, the poller's token) while no
// receive goroutine exists; idleArmed while the reader's idle deadline is
// the socket's read deadline, idleMark the FPDUs received when it was set
// (Close replaces the deadline with the close timeout, closeBy, and clears
// idleArmed). A connection that cannot park (c.raw nil, or ReaderIdle
// negative) never sets a deadline of its own.

// testBeforePark, when set by a test, runs in a reader that decided to
// park, before it registers with the poller (mu held): what arrives then
// must wake it all the same.
var testBeforePark atomic.Pointer[func(c *Conn)]

// readerIdle returns the idle time after which the reader parks, or 0 if
// it never does.
func (c *Conn) readerIdle() time.Duration {
	switch t := c.cfg.ReaderIdle; {
	case t < 0 || c.raw == nil:
		return 0
	case t == 0:
		return defaultReaderIdle
	default:
		return t
	}
}

// fillOrPark is fill(n) for the receive loop. While the reader may park
// it keeps an idle deadline on the socket, armed once per idle period
// (not per read: a deadline costs a timer update, and a ping-pong reads
// every few microseconds). When the deadline fires, the reader re-arms it
// if anything arrived during the period or part of an FPDU is buffered,
// and otherwise parks: parked is true, deliver returns and the goroutine
// ends.
func (c *Conn) fillOrPark(n int) (parked bool, err error) {
	s := &c.rx
	idle := c.readerIdle()
	if idle == 0 {
		return false, c.fill(n)
	}
	p := parkPoller()
	if p == nil {
		return false, c.fill(n)
	}
	for {
		c.mu.Lock()
		if !c.idleArmed && !c.closed && !c.aborted {
			c.idleArmed, c.idleMark = true, c.recvSegs.Load()
			_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		}
		c.mu.Unlock()

		err = c.fill(n)
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return false, err
		}

		c.mu.Lock()
		if !c.idleArmed {
			// Close set its own deadline since: the one that fired was the
			// idle one if the close timeout is still ahead.
			early := time.Now().Before(c.closeBy)
			c.mu.Unlock()
			if early {
				continue
			}
			return false, err // the close timeout
		}
		c.idleArmed = false
		if c.recvSegs.Load() != c.idleMark || s.r != s.w {
			c.mu.Unlock()
			continue // not idle: another period
		}
		// Nothing came for a whole period, and nothing is buffered: park.
		_ = c.nc.SetReadDeadline(time.Time{})
		buf := s.buf
		s.release()
		if h := testBeforePark.Load(); h != nil {
			(*h)(c)
		}
		tok, perr := p.add(c)
		if perr != nil {
			s.restore(buf)
			c.mu.Unlock()
			c.disarmIdle()
			return false, c.fill(n) // cannot park: keep reading, without deadline
		}
		c.parked, c.parkTok = true, tok
		c.parks.Add(1)
		c.mu.Unlock()
		if len(buf) == rxBufLen {
			rxBufs.Put(&buf)
		}
		return true, nil
	}
}

// disarmIdle clears the idle deadline, if armed, when the receive loop
// ends or stops parking: what follows reads without it (the draining after
// an MPA error, or a connection whose poller refused it).
func (c *Conn) disarmIdle() {
	c.mu.Lock()
	if c.idleArmed {
		c.idleArmed = false
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	c.mu.Unlock()
}

// unpark starts the receive goroutine of a connection the poller reported
// readable (tok: the registration it took).
func (c *Conn) unpark(tok uint64) {
	c.mu.Lock()
	if !c.parked || c.parkTok != tok {
		c.mu.Unlock()
		return // Close or Abort restarted it already
	}
	c.parked = false
	c.mu.Unlock()
	c.resume()
}

// wakeLocked starts the receive goroutine of a parked connection for
// Close or Abort, whose state it then observes. mu is held.
func (c *Conn) wakeLocked() {
	if !c.parked {
		return
	}
	c.parked = false
	if p := parkPoller(); p != nil {
		p.remove(c, c.parkTok)
	}
	c.resume()
}

// resume gives the receive state a buffer again and starts the receive
// goroutine where the parked one stopped.
func (c *Conn) resume() {
	c.rx.restore(nil)
	go c.receiveMore()
}

// release drops the receive buffer of a reader about to park (nothing is
// buffered); restore gives it back, or a new one of rxIdleLen octets.
func (s *rxState) release() {
	s.buf, s.r, s.w = nil, 0, 0
	s.size.Store(0)
}

func (s *rxState) restore(b []byte) {
	if b == nil {
		b = make([]byte, rxIdleLen)
	}
	s.buf, s.r, s.w = b, 0, 0
	s.size.Store(int64(len(b)))
}

// Parks returns how many times the receive goroutine parked (see
// Config.ReaderIdle).
func (c *Conn) parkCount() uint64 { return c.parks.Load() }
