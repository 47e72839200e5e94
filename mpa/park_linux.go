package mpa

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// idlePoller waits, for every parked connection of the process, until its
// socket has something to read (data, the peer's FIN or a reset), with
// one epoll instance and one goroutine in epoll_wait: a parked connection
// holds no goroutine (park.go). The goroutine runs while connections are
// parked and ends within pollerLinger once none is. Each registration is one-shot
// and level-triggered, so what arrived before it is reported at once; the
// event carries a token, not the descriptor, so that a number the kernel
// reuses for a new socket never reaches the old connection.
type idlePoller struct {
	epfd    int
	mu      sync.Mutex
	conns   map[uint64]*Conn
	next    uint64
	running bool // the goroutine runs (run), under mu
}

// pollerLinger is how long the poller's goroutine waits in epoll_wait
// before it looks whether any connection is still parked.
const pollerLinger = 100 // milliseconds

var poller struct {
	once sync.Once
	p    *idlePoller
}

// parkPoller returns the process's poller, started on first use, or nil
// where none can be had (then connections never park).
func parkPoller() *idlePoller {
	poller.once.Do(func() {
		fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return
		}
		poller.p = &idlePoller{epfd: fd, conns: make(map[uint64]*Conn)}
	})
	return poller.p
}

func (p *idlePoller) run() {
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(p.epfd, events, pollerLinger)
		if err != nil && !errors.Is(err, unix.EINTR) {
			panic("mpa: epoll_wait on the idle poller: " + err.Error()) // its descriptor is never closed
		}
		n = max(n, 0)
		for i := range events[:n] {
			tok := uint64(uint32(events[i].Fd)) | uint64(uint32(events[i].Pad))<<32
			p.mu.Lock()
			c := p.conns[tok]
			delete(p.conns, tok)
			p.mu.Unlock()
			if c != nil {
				c.unpark(tok)
			}
		}
		p.mu.Lock()
		if len(p.conns) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

// add registers c's socket and returns the token its event will carry.
func (p *idlePoller) add(c *Conn) (uint64, error) {
	p.mu.Lock()
	p.next++
	tok := p.next
	p.conns[tok] = c
	p.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(uint32(tok)), Pad: int32(uint32(tok >> 32))}
	var cerr error
	err := c.raw.Control(func(fd uintptr) {
		cerr = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
		if errors.Is(cerr, unix.EEXIST) { // parked before: the one-shot registration stays, disabled
			cerr = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, int(fd), &ev)
		}
	})
	if err == nil {
		err = cerr
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		delete(p.conns, tok)
		return 0, err
	}
	if !p.running {
		p.running = true
		go p.run()
	}
	return tok, nil
}

// remove forgets the registration tok of c (Close or Abort of a parked
// connection) and reports whether it was still waiting: false when the
// poller has already taken its event (and unpark runs or ran).
func (p *idlePoller) remove(c *Conn, tok uint64) bool {
	p.mu.Lock()
	_, ok := p.conns[tok]
	delete(p.conns, tok)
	p.mu.Unlock()
	_ = c.raw.Control(func(fd uintptr) {
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
	return ok
}
