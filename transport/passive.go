package transport

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/rdmapconf"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// passive is the listening side of one LLP, made by its registry row's
// listen (llps.go): the one place a Listener's stack is chosen.
type passive interface {
	addr() string
	// serve accepts until ctx ends (nil) or the listener fails, serving
	// what it accepts in goroutines of wg.
	serve(ctx context.Context, pd *rdmap.PD, h Handler, wg *sync.WaitGroup) error
	close()
	// stats fills the LLP's part of s.
	stats(s *ListenerStats)
}

// acceptFailed decides after a failed accept: stop (returning ret) when
// ctx ended or the listener is closed; otherwise the failure concerned one
// peer (a handshake timeout, a bad MPA Request, a rejected peer) and
// serving goes on after a pause.
func acceptFailed(ctx context.Context, err error) (stop bool, ret error) {
	if ctx.Err() != nil {
		return true, nil
	}
	if errors.Is(err, net.ErrClosed) {
		return true, err
	}
	select {
	case <-ctx.Done():
		return true, nil
	case <-time.After(10 * time.Millisecond):
	}
	return false, nil
}

// sctpPassive is the listening side of the SCTP LLPs: each association is
// served by a stream manager (package streams).
type sctpPassive struct {
	o      Options
	accept func(ctx context.Context) (*sctpllp.Association, error)
	addrFn func() string
	closer func() error
	// handshake, if set, returns the userspace listener's counters.
	handshake func() sctp.HandshakeStats
	// assocs: the associations served (assocstats.go).
	assocs assocTable
}

func (l *sctpPassive) addr() string { return l.addrFn() }
func (l *sctpPassive) close()       { _ = l.closer() }

func (l *sctpPassive) serve(ctx context.Context, pd *rdmap.PD, h Handler, wg *sync.WaitGroup) error {
	for {
		assoc, err := l.accept(ctx)
		if err != nil {
			if stop, ret := acceptFailed(ctx, err); stop {
				return ret
			}
			continue
		}
		wg.Go(func() { l.serveAssoc(ctx, assoc, pd, h) })
	}
}

func (l *sctpPassive) stats(s *ListenerStats) {
	l.assocs.stats(s)
	if l.handshake != nil {
		s.Handshake = l.handshake()
	}
}

// serveAssoc serves the streams of one association with a stream manager
// until the association or ctx ends.
func (l *sctpPassive) serveAssoc(ctx context.Context, assoc *sctpllp.Association, pd *rdmap.PD, h Handler) {
	l.assocs.add(assoc)
	defer l.assocs.remove(assoc)
	m := streams.New(assoc, pd, streams.Config{Endpoint: l.o.endpointConfig(), SharedCQ: l.o.SendCQ != nil || l.o.RecvCQ != nil, PrivateData: l.o.PrivateData})
	peer := peerIP(assoc.Transport().RemoteAddr())
	var wg sync.WaitGroup
	for {
		var admitted, rejected bool
		s, err := m.Accept(ctx, func(_ uint16, privateData []byte) (streams.OpenOptions, error) {
			if err := h.Admit(peer, privateData); err != nil {
				rejected = true
				return streams.OpenOptions{}, err
			}
			admitted = true
			return streams.OpenOptions{Prepare: h.Prepare}, nil
		})
		if err != nil {
			if admitted {
				h.Dropped(peer) // its set-up failed
			}
			if admitted || rejected {
				continue // one peer's request; the association's end stops
			}
			break
		}
		ep := s.Endpoint
		l.o.traceEnd(ep)
		if st, ok := h.(Starter); ok {
			// Nothing per stream while it lives: the stream manager
			// forgets it when its endpoint ends (the handler's doing or
			// the peer's), and closes what is left when ctx ends (m.Close
			// below, after the Serve goroutines).
			st.Start(ctx, peer, ep)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.Serve(ctx, peer, ep)
			closeEndpoint(ep)
			<-s.Done()
		}()
	}
	wg.Wait()
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = m.Close(cctx)
	cancel()
	select {
	case <-assoc.Done():
	case <-time.After(2 * time.Second):
		_ = assoc.Abort()
	}
}

// mpaPassive is mpa's listening side: a TCP listener whose connections
// each run the MPA Responder start-up (mpa.Server) in a goroutine of their
// own with a copy of cfg whose Accept callback is bound to that
// connection, under the admission caps (mpaadmit.go).
type mpaPassive struct {
	o     Options
	tcp   net.Listener
	cfg   *mpa.Config
	admit *mpaAdmission
	// tlsFailures counts connections whose TLS handshake failed.
	tlsFailures atomic.Uint64
}

func (l *mpaPassive) addr() string { return l.tcp.Addr().String() }
func (l *mpaPassive) close()       { _ = l.tcp.Close() }

func (l *mpaPassive) serve(ctx context.Context, pd *rdmap.PD, h Handler, wg *sync.WaitGroup) error {
	// Unblocks the TCP Accept below when ctx ends.
	stop := context.AfterFunc(ctx, l.close)
	defer stop()
	for {
		nc, err := l.tcp.Accept()
		if err != nil {
			if stop, ret := acceptFailed(ctx, err); stop {
				return ret
			}
			continue
		}
		ip, aerr := l.admit.admit(nc)
		if aerr != nil {
			refuse(nc) // before anything is allocated for it
			continue
		}
		wg.Add(1)
		go l.serveConn(ctx, nc, pd, h, ip, func() {
			l.admit.closed()
			wg.Done()
		})
	}
}

func (l *mpaPassive) stats(s *ListenerStats) {
	s.MPA = l.admit.stats()
	s.MPA.TLSFailures = l.tlsFailures.Load()
}

// serveConn runs the MPA Responder start-up on one TCP connection (RFC 5044
// §7.1.2, RFC 6581 §9) and serves the stream; done runs once when the
// connection's serving has ended. h.Admit decides in the start-up's Accept
// callback; a stream it admitted whose start-up or endpoint then fails (the
// Reply cannot be sent, the peer resets, ctx ends) is reported with
// h.Dropped, so the handler's stream count stays balanced. For a Starter,
// the goroutine ends once the stream is started: the stream's end (or
// ctx's, which aborts it) runs done, so an idle stream holds no goroutine
// of the Listener's (its MPA reader is the only one).
func (l *mpaPassive) serveConn(ctx context.Context, nc net.Conn, pd *rdmap.PD, h Handler, ip netip.Addr, done func()) {
	handedOff := false
	defer func() {
		if !handedOff {
			done()
		}
	}()
	admitted := false
	cfg := *l.cfg
	cfg.Accept = func(req *mpa.Frame) (mpa.Decision, error) {
		if err := h.Admit(ip, req.PrivateData); err != nil {
			return mpa.Decision{Reject: true, PrivateData: rejectData(err)}, nil
		}
		admitted = true
		return mpa.Decision{}, nil
	}
	if l.o.Capture != nil {
		nc = l.o.Capture.Conn(nc, false)
	}
	began := time.Now()
	if l.o.MPA.TLS != nil {
		tc := tlsServer(nc, l.o.MPA.TLS)
		hctx, cancel := context.WithTimeout(ctx, l.admit.timeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			l.admit.started(ip)
			l.admit.failures.Add(1)
			l.tlsFailures.Add(1)
			_ = nc.Close()
			return
		}
		nc = tc
	}
	conn, err := mpa.Server(ctx, nc, &cfg)
	l.admit.started(ip)
	if err != nil {
		if ctx.Err() == nil {
			if time.Since(began) >= l.admit.timeout {
				l.admit.timeouts.Add(1)
			} else {
				l.admit.failures.Add(1)
			}
		}
		_ = nc.Close() // also after a rejection: the Reply was sent
		if admitted {
			h.Dropped(ip)
		}
		return
	}
	ep, err := newMPAEndpoint(conn, l.o, pd, h.Prepare)
	if err != nil {
		h.Dropped(ip)
		return
	}
	if st, ok := h.(Starter); ok {
		st.Start(ctx, ip, ep)
		// Either may already have happened: AfterFunc and AfterDone then
		// run their function at once.
		handedOff = true
		stop := context.AfterFunc(ctx, func() { closeEndpoint(ep) })
		rdmapconf.AfterDone(ep, func() {
			stop()
			done()
		})
		return
	}
	h.Serve(ctx, ip, ep)
	closeEndpoint(ep)
}
