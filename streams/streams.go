// Package streams is the multistream manager: it runs many independent
// RDMAP Streams over one SCTP association, one DDP Stream per SCTP stream
// pair (RFC 5043 §4, §8), each with its own RDMAP state machine, queues and
// completion queues.
//
// The active side opens sessions on chosen stream identifiers with
// [Manager.Open]; the passive side admits them with [Manager.Accept]. Each
// yields a [Stream] whose Endpoint is an ordinary *rdmap.Endpoint. Package
// transport dials and listens with it over every SCTP LLP; use this
// package directly only over an association set up by hand.
package streams

// A protocol error on one stream makes its endpoint send the RDMAP
// Terminate on that stream only; the manager then labels the stream
// erroneous on the association (RFC 5040 §7: the LLP "MUST label the Stream
// as an erroneous Stream and MUST NOT allow any further data transfer on
// that Stream"), and every other stream keeps working. When every stream is
// torn down or erroneous the association shuts down (done by sctpllp).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/internal/rdmapconf"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
)

// Config configures a Manager. Zero fields take defaults.
type Config struct {
	// Endpoint is the template for every stream's endpoint. IRD and ORD
	// are this side's wishes; the values in force are negotiated per
	// stream with the RFC 6581 enhanced session control (see Negotiate).
	// SendCQ/RecvCQ in the template are ignored unless SharedCQ is set:
	// each stream gets its own completion queues.
	Endpoint rdmap.EndpointConfig
	// SharedCQ, if set, makes every stream use the template's SendCQ and
	// RecvCQ instead of private ones.
	SharedCQ bool
	// Enhanced selects the RFC 6581 Enhanced Initiate (IRD/ORD exchange)
	// on Open. Default true; set Legacy to use the plain RFC 5043 codes.
	Legacy bool
	// PrivateData is sent with every Initiate and Accept that does not
	// supply its own.
	PrivateData []byte
	// MaxIRD caps how far the passive side raises its IRD to meet the
	// initiator's ORD (RFC 6581 §9.1: the initiator ORD is "a request to
	// the responder to support a responder IRD of at least this value").
	// Default iwarp.DefaultMaxIRD.
	MaxIRD int
}

func (c Config) maxIRD() int {
	if c.MaxIRD <= 0 {
		return iwarp.DefaultMaxIRD
	}
	return c.MaxIRD
}

func (c Config) irdOrd() (ird, ord int) {
	ird, ord = c.Endpoint.IRD, c.Endpoint.ORD
	if ird == 0 {
		ird = iwarp.DefaultIRD
	}
	if ord == 0 {
		ord = iwarp.DefaultORD
	}
	if ird < 0 {
		ird = 0
	}
	if ord < 0 {
		ord = 0
	}
	return ird, ord
}

// Manager binds the DDP Stream Sessions of one association to RDMAP
// endpoints of one protection domain.
type Manager struct {
	assoc *sctpllp.Association
	pd    *rdmap.PD
	cfg   Config

	mu      sync.Mutex
	streams map[uint16]*Stream
	wg      sync.WaitGroup
}

// New returns a Manager for assoc whose endpoints belong to pd.
func New(assoc *sctpllp.Association, pd *rdmap.PD, cfg Config) *Manager {
	return &Manager{assoc: assoc, pd: pd, cfg: cfg, streams: make(map[uint16]*Stream)}
}

// Association returns the underlying association.
func (m *Manager) Association() *sctpllp.Association { return m.assoc }

// Stream is one RDMAP Stream on one SCTP stream pair. Its fields are set
// by the Manager; the Manager keeps its own copies.
type Stream struct {
	// ID is the SCTP stream identifier (= the DDP stream identifier).
	ID uint16
	// Endpoint is the stream's RDMAP endpoint.
	Endpoint *rdmap.Endpoint
	// Session is the stream's RFC 5043 session (negotiated parameters,
	// the peer's private data).
	Session sctpllp.Session

	m         *Manager
	id        uint16
	ep        *rdmap.Endpoint
	erroneous atomic.Bool
	// Done is Done's channel, made by its first call (an idle stream
	// holds none); finished is set when the manager is done with the
	// stream. Both guarded by mu.
	mu       sync.Mutex
	done     chan struct{}
	finished bool
}

// Erroneous reports whether the stream was labelled erroneous after an
// RDMAP Terminate (sent or received) or an LLP failure: its endpoint ended
// with an error other than rdmap.ErrClosed and rdmap.ErrPeerClosed.
func (s *Stream) Erroneous() bool { return s.erroneous.Load() }

// Done is closed when the stream's endpoint has stopped and the manager
// has finished with it (labelling included).
func (s *Stream) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.finished {
			close(s.done)
		}
	}
	return s.done
}

// finish closes Done.
func (s *Stream) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = true
	if s.done != nil {
		close(s.done)
	}
}

// OpenOptions overrides the manager defaults for one Open or Accept.
type OpenOptions struct {
	// PrivateData for the Initiate or Accept (nil: Config.PrivateData).
	PrivateData []byte
	// Prepare, if set, runs after the endpoint is created and before it
	// starts receiving: the place to post the first receive buffers, so
	// that a Send the peer issues right after set-up finds one (RFC 5041
	// §7.1: no buffer is an error).
	Prepare func(*rdmap.Endpoint) error
}

// Open starts a DDP Stream Session on stream sid as the active side,
// waits for the peer's Accept, and returns the running stream. A Reject
// is returned as an error wrapping *sctpllp.RejectError.
func (m *Manager) Open(ctx context.Context, sid uint16, opt OpenOptions) (*Stream, error) {
	ird, ord := m.cfg.irdOrd()
	pd := opt.PrivateData
	if pd == nil {
		pd = m.cfg.PrivateData
	}
	sess, err := m.assoc.Open(ctx, sid, sctpllp.OpenRequest{
		PrivateData: pd, IRD: ird, ORD: ord, Enhanced: !m.cfg.Legacy,
	})
	if err != nil {
		return nil, fmt.Errorf("streams: open stream %d: %w", sid, err)
	}
	p := sess.Params()
	d := iwarp.Depths{IRD: ird, ORD: ord}
	var rtr iwarp.RTR
	if p.Enhanced {
		// RFC 6581 §9.1 and §9.2 at the initiator, the rules every LLP
		// shares (package iwarp); a failure gets the Terminate the RFC
		// prescribes, as the stream's first and only message.
		d, err = iwarpwire.NegotiateInitiator(d, m.cfg.maxIRD(), p.PeerIRDORD)
		term := iwarp.Term.InsufficientIRD
		if err == nil {
			rtr, err = iwarpwire.NegotiateRTR(p.LocalIRDORD, p.PeerIRDORD)
			term = iwarp.Term.NoMatchingRTR
		}
		if err != nil {
			var b [iwarpwire.EstablishmentTerminateLen]byte
			_ = sess.SendSegment(nil, iwarpwire.AppendEstablishmentTerminate(b[:0], term))
			_ = sess.Abort()
			return nil, fmt.Errorf("streams: open stream %d: %w", sid, err)
		}
	}
	return m.bind(sess, true, d, p.PeerIRDORD.PeerToPeer && p.Enhanced, rtr, opt.Prepare)
}

// Accept waits for the peer's next session request and asks admit about
// it (the requested stream and the initiator's private data). An admitted
// session is accepted with admit's options and its running stream
// returned; admit's error rejects it (RFC 5043 §6.3) with the error's
// text as private data, and Accept returns an error wrapping it. The
// association's end (or ctx's) is returned as it is.
func (m *Manager) Accept(ctx context.Context, admit func(sid uint16, privateData []byte) (OpenOptions, error)) (*Stream, error) {
	in, err := m.assoc.Accept(ctx)
	if err != nil {
		return nil, err
	}
	opt, err := admit(in.StreamID, in.PrivateData)
	if err != nil {
		b := []byte(err.Error())
		_ = in.Reject(b[:min(len(b), maxRejectData)])
		return nil, fmt.Errorf("streams: stream %d rejected: %w", in.StreamID, err)
	}
	privateData := opt.PrivateData
	ird, ord := m.cfg.irdOrd()
	d := iwarp.Depths{IRD: ird, ORD: ord}
	var reply iwarp.IRDORD
	if in.Enhanced {
		// RFC 6581 §9.1 and §9.2 at the responder (package iwarp): ORD at
		// most the initiator IRD, IRD raised towards the initiator ORD up
		// to MaxIRD, 0x3FFF answered with 0x3FFF, flag A echoed.
		reply, d = iwarpwire.NegotiateResponder(d, m.cfg.maxIRD(), 0, in.IRDORD)
	}
	if privateData == nil {
		privateData = m.cfg.PrivateData
	}
	sess, err := in.Accept(sctpllp.AcceptParams{PrivateData: privateData, IRD: int(reply.IRD), ORD: int(reply.ORD),
		PeerToPeer: reply.PeerToPeer, RTR: reply.RTR})
	if err != nil {
		return nil, fmt.Errorf("streams: accept stream %d: %w", in.StreamID, err)
	}
	if !in.Enhanced {
		d = iwarp.Depths{IRD: iwarp.NoNegotiation, ORD: iwarp.NoNegotiation}
	}
	return m.bind(sess, false, d, reply.PeerToPeer, reply.RTR, opt.Prepare)
}

// maxRejectData bounds the private data of a Reject made of an error's
// text.
const maxRejectData = 200

// bind creates and starts the endpoint for an established session and
// watches it for termination.
func (m *Manager) bind(sess sctpllp.Session, initiator bool, d iwarp.Depths, peerToPeer bool, rtr iwarp.RTR, prepare func(*rdmap.Endpoint) error) (*Stream, error) {
	cfg := m.cfg.Endpoint
	cfg.IRD, cfg.ORD = m.cfg.irdOrd()
	rdmapconf.Apply(&cfg, initiator, d, peerToPeer, rtr)
	if !m.cfg.SharedCQ {
		cfg.SendCQ, cfg.RecvCQ = nil, nil
	}
	ep, err := m.pd.NewEndpoint(sess, cfg)
	if err != nil {
		_ = sess.Abort()
		return nil, fmt.Errorf("streams: stream %d: %w", sess.StreamID(), err)
	}
	if prepare != nil {
		if err := prepare(ep); err != nil {
			_ = ep.Close(context.Background())
			return nil, fmt.Errorf("streams: prepare stream %d: %w", sess.StreamID(), err)
		}
	}
	s := &Stream{ID: sess.StreamID(), Endpoint: ep, Session: sess, m: m, id: sess.StreamID(), ep: ep}
	m.mu.Lock()
	m.streams[s.id] = s
	m.mu.Unlock()
	if err := ep.Start(); err != nil {
		m.forget(s)
		_ = ep.Abort()
		return nil, fmt.Errorf("streams: start stream %d: %w", s.id, err)
	}
	m.wg.Add(1)
	rdmapconf.AfterDone(ep, func() { m.ended(s) })
	return s, nil
}

// ended labels a stream erroneous when its endpoint ended abnormally
// (RFC 5040 §7). It runs once the endpoint is done (rdmapconf.AfterDone):
// no goroutine waits for each stream meanwhile.
func (m *Manager) ended(s *Stream) {
	// Done is the last thing: once every stream's Done is closed, the
	// manager holds nothing of them.
	defer s.finish()
	defer m.wg.Done()
	err := s.ep.Err()
	if err != nil && !errors.Is(err, rdmap.ErrClosed) && !errors.Is(err, rdmap.ErrPeerClosed) {
		s.erroneous.Store(true)
		_ = m.assoc.MarkErroneous(s.id)
	}
	m.forget(s)
}

func (m *Manager) forget(s *Stream) {
	m.mu.Lock()
	if m.streams[s.id] == s {
		delete(m.streams, s.id)
	}
	m.mu.Unlock()
}

// allStreams returns the streams whose endpoints are still running.
func (m *Manager) allStreams() []*Stream {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Stream, 0, len(m.streams))
	for _, s := range m.streams {
		out = append(out, s)
	}
	return out
}

// Close closes every running stream gracefully (bounded by ctx; streams
// still busy when ctx ends are aborted), waits until the manager is done
// with each, then closes the association.
func (m *Manager) Close(ctx context.Context) error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, s := range m.allStreams() {
		wg.Add(1)
		go func(s *Stream) {
			defer wg.Done()
			if err := s.ep.Close(ctx); err != nil && !errors.Is(err, rdmap.ErrClosed) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("stream %d: %w", s.id, err))
				mu.Unlock()
			}
		}(s)
	}
	wg.Wait()
	m.wg.Wait()
	errs = append(errs, m.assoc.Close())
	return errors.Join(errs...)
}
