package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/transport"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// Hello is the private data every bench stream request carries (RFC 5043
// §6.2 Initiate, RFC 5044 §7.1.1 MPA Request); the server rejects others.
const Hello = "sctp-rdma bench/1"

// ErrNotBench is the reason a server rejects a stream request without
// Hello.
var ErrNotBench = errors.New("not a sctp-rdma bench client")

// ErrBusy is the reason a server rejects a stream beyond MaxStreams.
var ErrBusy = errors.New("server busy: stream limit reached")

// ServerConfig configures a bench server.
type ServerConfig struct {
	// MaxSize is the largest message size accepted (0: 64 MiB).
	MaxSize int
	// MaxStreams bounds the streams served at once over all clients
	// (0: 4096); beyond it stream requests are rejected.
	MaxStreams int
	// Log, if not nil, receives one line per finished stream.
	Log io.Writer
	// Counters, if not nil, counts the operations served.
	Counters *Counters
}

// Server is the passive side of the bench exchange. It serves any number
// of clients and streams concurrently.
type Server struct {
	cfg    ServerConfig
	pd     *rdmap.PD
	active atomic.Int64
	mu     sync.Mutex
	conns  map[*rdmap.Endpoint]*conn
	logMu  sync.Mutex
}

// NewServer returns a server with its own device and protection domain.
func NewServer(cfg ServerConfig) *Server {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = 64 << 20
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 4096
	}
	return &Server{cfg: cfg, pd: rdmap.NewDevice(rdmap.DeviceOptions{}).AllocPD(), conns: make(map[*rdmap.Endpoint]*conn)}
}

// Run serves ln until ctx ends; then every stream is aborted (its
// outstanding work requests are flushed, RFC 5040 §6.2.1) and Run returns
// when every goroutine has finished.
func (s *Server) Run(ctx context.Context, ln *transport.Listener) error {
	return ln.Serve(ctx, s.pd, s)
}

// Active returns the number of streams being served.
func (s *Server) Active() int { return int(s.active.Load()) }

// Admit implements transport.Handler.
func (s *Server) Admit(privateData []byte) error {
	if string(privateData) != Hello {
		return ErrNotBench
	}
	if s.active.Add(1) > int64(s.cfg.MaxStreams) {
		s.active.Add(-1)
		return fmt.Errorf("%w (%d)", ErrBusy, s.cfg.MaxStreams)
	}
	return nil
}

// Dropped implements transport.Handler: an admitted stream failed
// before it was served.
func (s *Server) Dropped() { s.active.Add(-1) }

// Prepare implements transport.Handler: it posts the receive for the
// client's Setup.
func (s *Server) Prepare(ep *rdmap.Endpoint) error {
	c := newConn(ep)
	c.ctr = s.cfg.Counters
	if err := c.post(ctrlLen); err != nil {
		return err
	}
	s.mu.Lock()
	s.conns[ep] = c
	s.mu.Unlock()
	return nil
}

// Serve implements transport.Handler: it runs one stream's exchange.
func (s *Server) Serve(ctx context.Context, ep *rdmap.Endpoint) {
	defer s.active.Add(-1)
	s.mu.Lock()
	c := s.conns[ep]
	delete(s.conns, ep)
	s.mu.Unlock()
	if c == nil {
		return
	}
	defer c.release()
	err := s.serve(ctx, c)
	if err == nil {
		// Wait for the client's graceful close (RFC 5040 §6.2).
		select {
		case <-ep.Done():
		case <-ctx.Done():
		}
	}
	if s.cfg.Log != nil {
		s.logMu.Lock()
		if err != nil {
			fmt.Fprintf(s.cfg.Log, "stream failed (%v test): %v\n", c.setup.Test, err)
		}
		s.logMu.Unlock()
	}
}

func (s *Server) serve(ctx context.Context, c *conn) error {
	b, err := c.recvMsg(ctx)
	if err != nil {
		return err
	}
	setup, _, err := ParseSetup(b)
	if err == nil && int(setup.Size) > s.cfg.MaxSize {
		_ = c.sendMsg(ctx, &Advert{Status: StatusTooLarge})
		return fmt.Errorf("size %d above --max-size %d", setup.Size, s.cfg.MaxSize)
	}
	if err != nil {
		_ = c.sendMsg(ctx, &Advert{Status: StatusBadSetup})
		return err
	}
	c.setup = setup
	active := setup.Reverse()
	if err := c.post(ctrlLen); err != nil { // the client's Advert
		return err
	}
	if err := c.prepareData(active); err != nil {
		return err
	}
	if err := c.sendMsg(ctx, &Advert{STag: c.mr.STag(), Length: uint64(c.mr.Len())}); err != nil {
		return err
	}
	if b, err = c.recvMsg(ctx); err != nil {
		return err
	}
	if c.peer, _, err = ParseAdvert(b); err != nil {
		return err
	}
	var rep Report
	if active {
		rep, err = c.active(ctx)
	} else {
		rep, err = c.passive(ctx)
	}
	if err != nil && rep.Status == StatusOK {
		rep.Status = StatusFailed
	}
	if serr := c.sendMsg(ctx, &rep); serr != nil && err == nil {
		err = serr
	}
	return err
}
