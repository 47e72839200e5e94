package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/workload"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// advert is what the server tells the client in the private data of every
// Accept (RFC 5043 §5.2.3) or MPA Reply (RFC 5044 §7.1.1): where it may
// write, read and run atomics, each a workload.Region.
type advert struct {
	write, read, atomic workload.Region
}

func (a advert) bytes() []byte {
	return a.atomic.Append(a.read.Append(a.write.Append(nil)))
}

func parseAdvert(b []byte) (advert, error) {
	var a advert
	for _, r := range []*workload.Region{&a.write, &a.read, &a.atomic} {
		var err error
		if *r, err = workload.ParseRegion(b); err != nil {
			return advert{}, fmt.Errorf("advert: %w", err)
		}
		b = b[workload.RegionLen:]
	}
	return a, nil
}

// serverOptions size the server.
type serverOptions struct {
	// MemLen is the size of the write target and of the read source.
	MemLen int
	// Recvs receive buffers of RecvLen octets are kept posted per
	// endpoint (reposted as soon as one is consumed).
	Recvs, RecvLen int
	// OnRecv, if set, sees every received Send in order, per endpoint.
	OnRecv func(ep *rdmap.Endpoint, b []byte)
}

// server is the passive side: one protection domain whose memory every
// endpoint shares, and endpoints that keep receive buffers posted.
type server struct {
	opt                     serverOptions
	pd                      *rdmap.PD
	target, source, atomics *rdmap.MR
	adv                     advert
	mu                      sync.Mutex
	eps                     []*rdmap.Endpoint
	wg                      sync.WaitGroup
	epCfg                   rdmap.EndpointConfig
	recvMu                  sync.Mutex
	recvBufs                map[*rdmap.Endpoint]map[uint64][]byte
	llps                    []*mpa.Conn // MPA connections served
}

func newServer(opt serverOptions) (*server, error) {
	pd := new(rdmap.Device).AllocPD()
	s := &server{opt: opt, pd: pd, recvBufs: map[*rdmap.Endpoint]map[uint64][]byte{}}
	s.epCfg = rdmap.EndpointConfig{RQDepth: opt.Recvs}
	var err error
	if s.target, err = pd.Register(make([]byte, opt.MemLen), rdmap.LocalWrite|rdmap.RemoteWrite); err != nil {
		return nil, err
	}
	src := make([]byte, opt.MemLen)
	fill(src, 7)
	if s.source, err = pd.Register(src, rdmap.RemoteRead); err != nil {
		return nil, err
	}
	if s.atomics, err = pd.Register(make([]byte, 4096), rdmap.LocalWrite|rdmap.RemoteAtomic); err != nil {
		return nil, err
	}
	s.adv = advert{write: regionOf(s.target), read: regionOf(s.source), atomic: regionOf(s.atomics)}
	return s, nil
}

// prepare posts the receive buffers of a new endpoint (before it starts).
func (s *server) prepare(ep *rdmap.Endpoint) error {
	bufs := make(map[uint64][]byte, s.opt.Recvs)
	for i := range s.opt.Recvs {
		b := make([]byte, s.opt.RecvLen)
		bufs[uint64(i)] = b
		if err := ep.PostRecv(uint64(i), b); err != nil {
			return err
		}
	}
	s.recvMu.Lock()
	s.recvBufs[ep] = bufs
	s.recvMu.Unlock()
	return nil
}

// track starts the receive loop of a running endpoint.
func (s *server) track(ep *rdmap.Endpoint) {
	s.mu.Lock()
	s.eps = append(s.eps, ep)
	s.mu.Unlock()
	s.recvMu.Lock()
	bufs := s.recvBufs[ep]
	s.recvMu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		cq := ep.Config().RecvCQ
		wake := wakeOn(cq)
		defer cq.SetHandler(nil)
		var one [1]rdmap.Completion
		for {
			if cq.PollN(one[:]) == 0 {
				select {
				case <-wake:
				case <-ep.Done():
					return
				}
				continue
			}
			c := one[0]
			if c.Err != nil {
				continue
			}
			b := bufs[c.WRID]
			if s.opt.OnRecv != nil {
				s.opt.OnRecv(ep, b[:c.Length])
			}
			if ep.PostRecv(c.WRID, b) != nil {
				return
			}
		}
	}()
}

// endpoints returns the endpoints accepted so far.
func (s *server) endpoints() []*rdmap.Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*rdmap.Endpoint(nil), s.eps...)
}

// abortAll aborts every endpoint and waits for them and the receive loops.
// The MPA connections are aborted first: an endpoint's own Abort sends its
// Terminate and then waits for the peer's FIN (mpa.Config.CloseTimeout),
// which a peer behind a dead path never sends.
func (s *server) abortAll() {
	s.mu.Lock()
	llps := s.llps
	s.mu.Unlock()
	for _, c := range llps {
		_ = c.Abort()
	}
	for _, ep := range s.endpoints() {
		_ = ep.Abort()
		<-ep.Done()
	}
	s.wg.Wait()
}

// serveStreams accepts every session the peer opens on mgr until ctx ends
// or the association does.
func (s *server) serveStreams(ctx context.Context, mgr *streams.Manager) error {
	for {
		st, err := mgr.Accept(ctx, func(uint16, []byte) (streams.OpenOptions, error) {
			return streams.OpenOptions{PrivateData: s.adv.bytes(), Prepare: s.prepare}, nil
		})
		if err != nil {
			return err
		}
		s.track(st.Endpoint)
	}
}

// serveMPA accepts MPA connections on ln until ctx ends or ln closes.
func (s *server) serveMPA(ctx context.Context, ln *mpa.Listener, conns chan<- *mpa.Conn) error {
	for {
		c, err := ln.Accept(ctx)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.llps = append(s.llps, c)
		s.mu.Unlock()
		ep, err := s.pd.NewEndpoint(c, s.epCfg)
		if err != nil {
			_ = c.Abort()
			return err
		}
		if err := s.prepare(ep); err != nil {
			_ = ep.Abort()
			return err
		}
		if err := ep.Start(); err != nil {
			return errors.Join(err, ep.Abort())
		}
		s.track(ep)
		if conns != nil {
			conns <- c
		}
	}
}

// mpaServerConfig is the Responder configuration that carries the advert.
func (s *server) mpaConfig() *mpa.Config {
	return &mpa.Config{PrivateData: s.adv.bytes()}
}

// streamsConfig is the manager configuration of both sides.
func streamsConfig(rq int) streams.Config {
	return streams.Config{Endpoint: rdmap.EndpointConfig{SQDepth: 1024, RQDepth: rq}}
}

// fill writes a xorshift pattern seeded by seed.
func fill(b []byte, seed byte) {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}

// regionOf is where mr is, for the advert.
func regionOf(mr *rdmap.MR) workload.Region {
	return workload.Region{STag: mr.STag(), TO: mr.BaseTO(), Length: uint64(len(mr.Bytes()))}
}
