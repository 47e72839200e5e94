package streams_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chunk is one received SCTP user message seen by a tap.
type chunk struct {
	sid  uint16
	ppid uint32
	b    []byte
}

// tapTransport records every message the wrapped transport delivers.
type tapTransport struct {
	backend.Transport
	mu   sync.Mutex
	seen []chunk
}

func (t *tapTransport) Start(fn func(sid uint16, ppid uint32, b []byte), done func(err error)) {
	t.Transport.Start(func(sid uint16, ppid uint32, b []byte) {
		t.mu.Lock()
		t.seen = append(t.seen, chunk{sid, ppid, append([]byte(nil), b...)})
		t.mu.Unlock()
		fn(sid, ppid, b)
	}, done)
}

func (t *tapTransport) chunks(sid uint16) []chunk {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []chunk
	for _, c := range t.seen {
		if c.sid == sid {
			out = append(out, c)
		}
	}
	return out
}

// env is a pion association pair on loopback, each side with a manager.
type env struct {
	client, server *streams.Manager
	ca, sa         *sctpllp.Association
	tap            *tapTransport // the client's transport
	dev            *rdmap.Device
	cpd, spd       *rdmap.PD
}

func newEnv(t *testing.T, ccfg, scfg streams.Config) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := pion.Stack(pion.Config{}).Listen("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	type res struct {
		tr  backend.Transport
		err error
	}
	acc := make(chan res, 1)
	go func() { tr, err := ln.Accept(ctx); acc <- res{tr, err} }()
	ct, err := pion.Stack(pion.Config{}).Dial(ctx, ln.Addr().String())
	require.NoError(t, err)
	r := <-acc
	require.NoError(t, r.err)

	e := &env{dev: new(rdmap.Device)}
	e.cpd, e.spd = e.dev.AllocPD(), e.dev.AllocPD()
	e.tap = &tapTransport{Transport: ct}
	e.ca = sctpllp.NewAssociation(e.tap, sctpllp.Config{})
	e.sa = sctpllp.NewAssociation(r.tr, sctpllp.Config{})
	e.client = streams.New(e.ca, e.cpd, ccfg)
	e.server = streams.New(e.sa, e.spd, scfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.client.Close(ctx)
		_ = e.server.Close(ctx)
	})
	return e
}

// pair is one stream seen from both sides, with a target MR at the server.
type pair struct {
	c, s   *streams.Stream
	target *rdmap.MR
}

// open opens stream sid from the client; the server accepts it and
// registers a 64 KiB target bound to the stream.
func (e *env) open(t *testing.T, ctx context.Context, sid uint16) pair {
	t.Helper()
	type acc struct {
		s   *streams.Stream
		err error
	}
	ch := make(chan acc, 1)
	go func() {
		s, err := e.server.Accept(ctx, admitAll)
		ch <- acc{s, err}
	}()
	c, err := e.client.Open(ctx, sid, streams.OpenOptions{})
	require.NoError(t, err)
	a := <-ch
	require.NoError(t, a.err)
	require.Equal(t, sid, a.s.ID)
	target, err := e.spd.Register(make([]byte, 64<<10), rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic,
		rdmap.MROption{Endpoint: a.s.Endpoint})
	require.NoError(t, err)
	return pair{c: c, s: a.s, target: target}
}

// exercise runs Write, Read-back, Send and FetchAdd on p and checks every
// byte (RFC 5040 §5.5 rule 12: a Read after a Write sees the Write).
func exercise(ctx context.Context, cpd *rdmap.PD, p pair, round int) error {
	ep := p.c.Endpoint
	src := bytes.Repeat([]byte{byte(p.c.ID), byte(round)}, 10000)
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: src, RemoteSTag: p.target.STag()}); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	sink, err := cpd.Register(make([]byte, len(src)), rdmap.LocalWrite)
	if err != nil {
		return err
	}
	defer sink.Deregister()
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, Length: uint32(len(src)), RemoteSTag: p.target.STag()}); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if !bytes.Equal(sink.Bytes(), src) {
		return errors.New("read-back differs from write")
	}
	before := binary.NativeEndian.Uint64(p.target.Bytes()[40000:])
	origC, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: p.target.STag(), RemoteTO: 40000, Add: 1})
	orig := origC.Orig
	if err != nil {
		return fmt.Errorf("fetchadd: %w", err)
	}
	if orig != before {
		return fmt.Errorf("fetchadd orig %d, want %d", orig, before)
	}
	// Send: the server posts its receive first (RFC 5041 §7.1: a Send
	// without a posted buffer is a protocol error), then checks the payload.
	rbuf := make([]byte, 64)
	if err := p.s.Endpoint.PostRecv(uint64(round), rbuf); err != nil {
		return err
	}
	msg := fmt.Sprintf("hello %d/%d", p.c.ID, round)
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte(msg)}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	c, err := p.s.Endpoint.Config().RecvCQ.Poll(ctx)
	if err != nil {
		return err
	}
	if c.Err != nil || c.WRID != uint64(round) || string(rbuf[:c.Length]) != msg {
		return fmt.Errorf("send received as %+v %q", c, rbuf[:c.Length])
	}
	return nil
}

// TestStreams_ErrorOnOneStreamOthersContinue_RFC5040_7 injects a malformed
// segment on one stream and checks the Terminate on the wire (a PPID 16
// chunk on that stream carrying an RDMAP Terminate with layer DDP, tagged
// buffer error, invalid STag, and a copy of the offending header), the
// erroneous label on both sides, and that every other stream keeps working.
func TestStreams_ErrorOnOneStreamOthersContinue_RFC5040_7(t *testing.T) {
	e := newEnv(t, streams.Config{}, streams.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 6
	const victim = 3
	pairs := make([]pair, 0, n)
	for sid := uint16(1); sid <= n; sid++ {
		pairs = append(pairs, e.open(t, ctx, sid))
	}
	for _, p := range pairs {
		require.NoError(t, exercise(ctx, e.cpd, p, 0), "stream %d before the break", p.c.ID)
	}

	v := pairs[victim-1]
	bad := iwarpwire.DDPTaggedHeader{Last: true, RsvdULP: iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), STag: v.target.STag() ^ 0x00A5A500, TO: 0}
	var hb [iwarpwire.DDPTaggedHeaderLen]byte
	hdr := bad.Append(hb[:0])
	require.NoError(t, v.c.Session.SendSegment(hdr, []byte("hostile")))

	for _, s := range []*streams.Stream{v.s, v.c} {
		select {
		case <-s.Done():
		case <-ctx.Done():
			t.Fatal("victim stream did not end")
		}
		assert.True(t, s.Erroneous(), "stream %d labelled erroneous", s.ID)
	}
	var te *rdmap.TerminateError
	require.ErrorAs(t, v.c.Endpoint.Err(), &te)
	assert.True(t, te.Remote)
	assert.Equal(t, iwarp.Term.DDPInvalidSTag, te.Code)

	// The Terminate as it arrived on the wire: DDP-SSN, untagged header on
	// QN 2 with opcode Terminate, then the Terminate header.
	var found bool
	for _, c := range e.tap.chunks(victim) {
		if c.ppid != backend.PPIDSegment {
			continue
		}
		require.GreaterOrEqual(t, len(c.b), 2, "a DDP-SSN (RFC 5043 §5.2.2)")
		var seg iwarpwire.DDPSegment
		require.NoError(t, iwarpwire.ParseDDPSegment(c.b[2:], &seg))
		if seg.Tagged || seg.Untag.QN != iwarpwire.RDMAPQNTerminate {
			continue
		}
		assert.Equal(t, iwarpwire.RDMAPControlByte(iwarp.RDMAPOpTerminate), seg.Untag.RsvdULP[0])
		// The Terminate header (RFC 5040 §4.8 Figure 7): control, segment
		// length, the terminated DDP header.
		p := seg.Payload
		require.GreaterOrEqual(t, len(p), iwarpwire.TerminateControlLen+iwarpwire.TerminateSegLenLen+len(hdr))
		code, m, d, r := iwarpwire.DecodeTerminateControl(p)
		assert.Equal(t, te.Code, code)
		assert.True(t, d && m, "DDP header and segment length included (RFC 5040 §4.8 Figure 10)")
		assert.False(t, r)
		p = p[iwarpwire.TerminateControlLen:]
		assert.Equal(t, uint16(len(hdr)+len("hostile")), binary.BigEndian.Uint16(p))
		assert.Equal(t, hdr, p[iwarpwire.TerminateSegLenLen:iwarpwire.TerminateSegLenLen+len(hdr)])
		found = true
	}
	require.True(t, found, "a Terminate chunk arrived on stream %d", victim)
	for _, c := range e.tap.chunks(victim + 1) {
		if c.ppid == backend.PPIDSegment {
			var seg iwarpwire.DDPSegment
			if len(c.b) >= 2 && iwarpwire.ParseDDPSegment(c.b[2:], &seg) == nil && !seg.Tagged {
				assert.NotEqual(t, iwarpwire.RDMAPQNTerminate, seg.Untag.QN, "no Terminate on a healthy stream")
			}
		}
	}

	// Every other stream keeps working, concurrently.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, p := range pairs {
		if i == victim-1 {
			continue
		}
		wg.Add(1)
		go func(i int, p pair) {
			defer wg.Done()
			for round := 1; round <= 3 && errs[i] == nil; round++ {
				errs[i] = exercise(ctx, e.cpd, p, round)
			}
		}(i, p)
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "stream %d after the break", i+1)
	}
	for i, p := range pairs {
		assert.Equal(t, i == victim-1, p.c.Erroneous(), "stream %d", i+1)
		assert.Equal(t, i == victim-1, p.c.Endpoint.Err() != nil, "stream %d running", i+1)
	}

	// RFC 5043 §6.6 / RFC 5040 §7: an erroneous stream id is not reused.
	_, err := e.client.Open(ctx, victim, streams.OpenOptions{})
	require.Error(t, err)

	// Closing the remaining streams shuts the association down.
	for i, p := range pairs {
		if i != victim-1 {
			require.NoError(t, p.c.Endpoint.Close(ctx))
		}
	}
	for _, a := range []*sctpllp.Association{e.ca, e.sa} {
		select {
		case <-a.Done():
		case <-ctx.Done():
			t.Fatal("association still up after every stream closed or erroneous")
		}
	}
}

// TestStreams_NegotiatesIRDORD_RFC6581_9_1 checks the values in force
// after the enhanced exchange.
func TestStreams_NegotiatesIRDORD_RFC6581_9_1(t *testing.T) {
	e := newEnv(t,
		streams.Config{Endpoint: rdmap.EndpointConfig{IRD: 4, ORD: 8}},
		streams.Config{Endpoint: rdmap.EndpointConfig{IRD: 2, ORD: 3}, MaxIRD: 5})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := e.open(t, ctx, 7)
	// Responder: ORD ≤ initiator IRD (3 ≤ 4); IRD raised towards the
	// initiator ORD (8) but capped at MaxIRD (5).
	assert.Equal(t, 3, p.s.Endpoint.Config().ORD)
	assert.Equal(t, 5, p.s.Endpoint.Config().IRD)
	// Initiator: ORD ≤ responder IRD (5); IRD ≥ responder ORD (3 ≤ 4).
	assert.Equal(t, 5, p.c.Endpoint.Config().ORD)
	assert.Equal(t, 4, p.c.Endpoint.Config().IRD)
	require.NoError(t, exercise(ctx, e.cpd, p, 0))
}

// TestStreams_Reject_RFC5043_6_3 checks that a rejected Open reports the
// peer's private data and leaves the association usable.
func TestStreams_Reject_RFC5043_6_3(t *testing.T) {
	e := newEnv(t, streams.Config{}, streams.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		_, err := e.server.Accept(ctx, func(uint16, []byte) (streams.OpenOptions, error) { return streams.OpenOptions{}, errors.New("busy") })
		assert.ErrorContains(t, err, "busy")
	}()
	_, err := e.client.Open(ctx, 1, streams.OpenOptions{PrivateData: []byte("please")})
	var rej *sctpllp.RejectError
	require.ErrorAs(t, err, &rej)
	assert.Equal(t, []byte("busy"), rej.PrivateData)
	p := e.open(t, ctx, 2)
	require.NoError(t, exercise(ctx, e.cpd, p, 0))
}

// TestStreams_PrepareRunsBeforeStart checks that receives posted in
// Prepare catch a Send the peer issues immediately after set-up.
func TestStreams_PrepareRunsBeforeStart(t *testing.T) {
	e := newEnv(t, streams.Config{}, streams.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		s, err := e.server.Accept(ctx, admitAll)
		if err != nil {
			return
		}
		_, _ = s.Endpoint.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("first!")})
	}()
	buf := make([]byte, 16)
	c, err := e.client.Open(ctx, 9, streams.OpenOptions{Prepare: func(ep *rdmap.Endpoint) error {
		return ep.PostRecv(42, buf)
	}})
	require.NoError(t, err)
	comp, err := c.Endpoint.Config().RecvCQ.Poll(ctx)
	require.NoError(t, err)
	require.NoError(t, comp.Err)
	assert.Equal(t, uint64(42), comp.WRID)
	assert.Equal(t, "first!", string(buf[:comp.Length]))
}

// BenchmarkIdleStreamMemory reports the heap held per open, idle stream
// (both ends: session, endpoint, queues, goroutines).
func BenchmarkIdleStreamMemory(b *testing.B) {
	n := min(b.N, 2000)
	ln, err := pion.Stack(pion.Config{}).Listen("127.0.0.1:0")
	require.NoError(b, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	acc := make(chan backend.Transport, 1)
	go func() { tr, _ := ln.Accept(ctx); acc <- tr }()
	ct, err := pion.Stack(pion.Config{}).Dial(ctx, ln.Addr().String())
	require.NoError(b, err)
	st := <-acc
	require.NotNil(b, st)
	dev := new(rdmap.Device)
	cm := streams.New(sctpllp.NewAssociation(ct, sctpllp.Config{}), dev.AllocPD(), streams.Config{})
	sm := streams.New(sctpllp.NewAssociation(st, sctpllp.Config{}), dev.AllocPD(), streams.Config{})
	defer func() { _ = cm.Close(ctx); _ = sm.Close(ctx) }()
	go func() {
		for {
			if _, err := sm.Accept(ctx, admitAll); err != nil {
				return
			}
		}
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	b.ResetTimer()
	for sid := 1; sid <= n; sid++ {
		_, err := cm.Open(ctx, uint16(sid), streams.OpenOptions{})
		require.NoError(b, err)
	}
	b.StopTimer()
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "heapB/stream-pair")
	b.ReportMetric(float64(runtime.NumGoroutine()-g0)/float64(n), "goroutines/stream-pair")
}

// segRecorder is an llp.Handler that keeps every segment of one session.
type segRecorder struct {
	segs   chan []byte
	closed chan error
}

func (r *segRecorder) HandleSegment(seg []byte) error {
	r.segs <- append([]byte(nil), seg...)
	return nil
}

func (r *segRecorder) HandleClosed(err error) { r.closed <- err }

// TestStreams_InsufficientIRD_RFC6581_9_1: a responder whose ORD exceeds
// what the initiator can serve as IRD makes the initiator fail the Open
// and send "a TERM message ... Layer 2, Error Type 0, Error Code 6" as the
// stream's only message, the same octets MPA sends (package iwarp).
func TestStreams_InsufficientIRD_RFC6581_9_1(t *testing.T) {
	e := newEnv(t, streams.Config{Endpoint: rdmap.EndpointConfig{IRD: 4, ORD: 4}, MaxIRD: 8}, streams.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A running stream keeps the association up (by default it shuts down
	// when every stream that carried a session has ended, sctpllp.Config).
	p := e.open(t, ctx, 4)
	rec := &segRecorder{segs: make(chan []byte, 4), closed: make(chan error, 1)}
	go func() {
		in, err := e.sa.Accept(ctx)
		if !assert.NoError(t, err) {
			return
		}
		assert.Equal(t, iwarp.IRDORD{IRD: 4, ORD: 4}, in.IRDORD)
		sess, err := in.Accept(sctpllp.AcceptParams{IRD: 4, ORD: 9}) // breaks §9.1's MUST
		if assert.NoError(t, err) {
			sess.Start(rec)
		}
	}()
	_, err := e.client.Open(ctx, 3, streams.OpenOptions{})
	require.ErrorIs(t, err, iwarp.ErrInsufficientIRD)
	select {
	case seg := <-rec.segs:
		assert.Equal(t, iwarpwire.AppendEstablishmentTerminate(nil, iwarp.Term.InsufficientIRD), seg)
		require.GreaterOrEqual(t, len(seg), 18+iwarpwire.TerminateControlLen)
		got, _, _, _ := iwarpwire.DecodeTerminateControl(seg[18:])
		assert.Equal(t, iwarp.Term.InsufficientIRD, got)
	case <-ctx.Done():
		t.Fatal("no Terminate reached the responder")
	}
	// The other stream is untouched.
	require.NoError(t, exercise(ctx, e.cpd, p, 0))
}

// admitAll admits every session with the manager's defaults.
func admitAll(uint16, []byte) (streams.OpenOptions, error) { return streams.OpenOptions{}, nil }
