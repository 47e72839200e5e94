// Package e2e holds the end-to-end RDMA suite shared by every SCTP backend:
// streams.Manager and rdmap over one sctpllp.Association, written once
// against a factory of established association pairs and run over
// userspace SCTP (pion over UDP loopback, on the host), Linux kernel SCTP
// (in the test VM) and kernel↔pion over SCTP's UDP encapsulation (RFC 6951,
// in the test VM, both directions).
//
// The suite (Run) checks, over one association:
//   - many DDP streams running concurrently, each performing every RDMAP
//     operation (Send, Send with SE, Send with Invalidate, RDMA Write, RDMA
//     Read, Atomic FetchAdd and CmpSwap, Immediate Data, Write with
//     Immediate) with random sizes and byte-for-byte verification at both
//     ends;
//   - one stream broken by a malformed DDP segment (a tagged segment for an
//     STag the peer never advertised): the peer's Terminate carries DDP
//     layer / tagged buffer error / invalid STag (RFC 5041 §7.2) and the
//     offending header, the stream is labelled erroneous on both sides
//     (RFC 5040 §7) and every other stream completes;
//   - that the association shuts down by itself once every stream is
//     closed or erroneous (RFC 5040 §7, RFC 5043 §6.4), on both sides.
package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/ddp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// Factory returns a freshly established association pair: client is the
// side that opens DDP Stream Sessions, server the side that accepts them.
// Neither may carry a session yet. The factory registers the cleanup that
// releases whatever it created besides the associations (listeners,
// sockets); the suite ends both associations itself.
type Factory func(t *testing.T) (client, server *sctpllp.Association)

// Options sizes a Run.
type Options struct {
	// Streams is the number of DDP streams opened concurrently (default
	// 8). Stream IDs are 1..Streams; the association needs Streams+1
	// SCTP streams.
	Streams int
	// MaxSize is the largest random message size (default 64 KiB).
	MaxSize int
	// Seed seeds the random sizes (default: from the clock, logged).
	Seed uint64
	// Timeout bounds each sub-test (default 90 s).
	Timeout time.Duration
	// ShutdownStall marks a pair whose SCTP shutdown handshake is known
	// to stall now and then (kernel↔pion: docs/kernel-sctp.md, "SHUTDOWN
	// crossing RE-CONFIG"). The association must still end, and a side may
	// end only with sctpllp.ErrKernelShutdownTimeout (the kernel's Close
	// aborting after CloseTimeout) instead of gracefully; it is logged.
	ShutdownStall bool
}

func (o *Options) defaults() {
	if o.Streams <= 0 {
		o.Streams = 8
	}
	if o.MaxSize <= 0 {
		o.MaxSize = 64 << 10
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	if o.Timeout <= 0 {
		o.Timeout = 90 * time.Second
	}
}

// Run runs the whole suite, one fresh association pair per sub-test.
func Run(t *testing.T, newPair Factory, opt Options) {
	opt.defaults()
	t.Logf("e2e: %d streams, sizes 1..%d, seed %d", opt.Streams, opt.MaxSize, opt.Seed)
	t.Run("AllOperations", func(t *testing.T) { runAllOperations(t, newPair, opt) })
	t.Run("CloseAllStreamsShutsDown", func(t *testing.T) { runCloseAll(t, newPair, opt) })
}

// The advertisement the server sends first on every stream: where the
// client may write, read and run atomics, and the STag it may invalidate.
const advertLen = 24

type advert struct {
	stag, invSTag uint32
	size          uint32
	counterOff    uint64
}

func (a advert) bytes() []byte {
	b := make([]byte, advertLen)
	binary.BigEndian.PutUint32(b[0:], a.stag)
	binary.BigEndian.PutUint32(b[4:], a.invSTag)
	binary.BigEndian.PutUint32(b[8:], a.size)
	binary.BigEndian.PutUint64(b[16:], a.counterOff)
	return b
}

func parseAdvert(b []byte) advert {
	return advert{
		stag:       binary.BigEndian.Uint32(b[0:]),
		invSTag:    binary.BigEndian.Uint32(b[4:]),
		size:       binary.BigEndian.Uint32(b[8:]),
		counterOff: binary.BigEndian.Uint64(b[16:]),
	}
}

// Tags of the patterns each operation carries.
const (
	tagWrite    = 'W'
	tagSend     = 'S'
	tagSendSE   = 'E'
	tagSendInv  = 'V'
	tagWriteImm = 'I'
)

// pattern fills b with a sequence derived from the stream and a tag, so
// that both sides can verify what arrived.
func pattern(b []byte, sid uint16, tag byte) []byte {
	x := uint64(sid)<<32 | uint64(tag)<<24 | 0x9E3779B97F4A7C15
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

func immA(sid uint16) uint64 { return uint64(sid)<<32 | 0xA11CE }
func immB(sid uint16) uint64 { return uint64(sid)<<32 | 0xB0B }

// Atomics (RFC 7306 §5.1): three FetchAdds, then a CmpSwap to finalCounter.
const (
	fetchAddStep = 7
	finalCounter = 0x5C7B_ADDA
)

// sizeFor draws stream sid's message size: fixed edge cases for the first
// streams (one octet, one MULPDU, one MULPDU plus one), random beyond.
func sizeFor(rng *rand.Rand, sid uint16, mulpdu, maxSize int) int {
	switch sid {
	case 1:
		return 1
	case 2:
		return min(mulpdu, maxSize)
	case 3:
		return min(mulpdu+1, maxSize)
	}
	return 1 + rng.IntN(maxSize)
}

// serverStream is the passive side of one stream's script: it advertises
// its buffers, then checks every message the client sends and the state of
// its memory after the client's Writes and Atomics.
func serverStream(ctx context.Context, pd *rdmap.PD, s *streams.Stream, size int) error {
	ep := s.Endpoint()
	counterOff := uint64((size + 7) &^ 7)
	target, err := pd.Register(make([]byte, counterOff+8),
		rdmap.LocalWrite|rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic, rdmap.WithEndpoint(ep))
	if err != nil {
		return err
	}
	defer target.Deregister()
	inv, err := pd.Register(make([]byte, 64), rdmap.RemoteRead, rdmap.WithEndpoint(ep), rdmap.WithRemoteInvalidate())
	if err != nil {
		return err
	}
	defer inv.Deregister()

	// Five receives, consumed in order (RFC 5041 §5.3: MSN order on QN 0):
	// Send, Send with SE, Send with Invalidate, Immediate Data, and the
	// Immediate Data with SE of the Write with Immediate.
	bufs := [][]byte{make([]byte, size), make([]byte, size), make([]byte, size), make([]byte, 8), make([]byte, 8)}
	for i, b := range bufs {
		if err := ep.PostRecv(rdmap.RecvWR{ID: uint64(i + 1), Buf: b}); err != nil {
			return err
		}
	}
	adv := advert{stag: target.STag(), invSTag: inv.STag(), size: uint32(size), counterOff: counterOff}
	if err := ep.Send(ctx, adv.bytes()); err != nil {
		return fmt.Errorf("advertise: %w", err)
	}
	want := make([]byte, size)
	for i := range bufs {
		c, err := ep.RecvCQ().Poll(ctx)
		if err != nil {
			return err
		}
		if c.Err != nil {
			return fmt.Errorf("receive %d: %w", c.WRID, c.Err)
		}
		if c.WRID != uint64(i+1) {
			return fmt.Errorf("receive completion %d out of order (want %d)", c.WRID, i+1)
		}
		switch c.WRID {
		case 1, 2, 3:
			tag := []byte{tagSend, tagSendSE, tagSendInv}[i]
			pattern(want, s.ID(), tag)
			if c.Length != size || !bytes.Equal(bufs[i][:c.Length], want) {
				return fmt.Errorf("%c payload corrupt (%d octets of %d)", tag, c.Length, size)
			}
			if c.Solicited != (c.WRID == 2) {
				return fmt.Errorf("receive %d: solicited %v", c.WRID, c.Solicited)
			}
			wantInv := uint32(0)
			if c.WRID == 3 {
				wantInv = inv.STag() // RFC 5040 §5.3: Send with Invalidate
			}
			if c.InvalidatedSTag != wantInv {
				return fmt.Errorf("receive %d: invalidated STag %#x, want %#x", c.WRID, c.InvalidatedSTag, wantInv)
			}
		case 4:
			if !c.HasImm || c.Imm != immA(s.ID()) || c.Solicited {
				return fmt.Errorf("immediate data %#x (has %v, SE %v), want %#x without SE", c.Imm, c.HasImm, c.Solicited, immA(s.ID()))
			}
		case 5:
			if !c.HasImm || c.Imm != immB(s.ID()) || !c.Solicited {
				return fmt.Errorf("immediate data %#x (has %v, SE %v), want %#x with SE", c.Imm, c.HasImm, c.Solicited, immB(s.ID()))
			}
			// RFC 7306 §6: the Write before the Immediate Data is placed.
			if !bytes.Equal(target.Bytes()[:size], pattern(want, s.ID(), tagWriteImm)) {
				return errors.New("write-with-immediate data corrupt at the target")
			}
			if v := binary.NativeEndian.Uint64(target.Bytes()[counterOff:]); v != finalCounter {
				return fmt.Errorf("atomic counter %#x, want %#x", v, uint64(finalCounter))
			}
		}
	}
	select {
	case <-ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := ep.Err(); !errors.Is(err, rdmap.ErrPeerClosed) && !errors.Is(err, rdmap.ErrClosed) {
		return fmt.Errorf("after the client's close: %w", err)
	}
	return nil
}

// postAndWait posts wr and waits for its completion on the send CQ.
func postAndWait(ctx context.Context, ep *rdmap.Endpoint, wr rdmap.SendWR) error {
	if err := ep.PostSend(wr); err != nil {
		return err
	}
	c, err := ep.SendCQ().Poll(ctx)
	if err != nil {
		return err
	}
	if c.WRID != wr.ID {
		return fmt.Errorf("send completion %d, want %d", c.WRID, wr.ID)
	}
	return c.Err
}

// clientStream is the active side of one stream's script.
func clientStream(ctx context.Context, pd *rdmap.PD, s *streams.Stream, advBuf []byte) error {
	ep := s.Endpoint()
	c, err := ep.RecvCQ().Poll(ctx)
	if err != nil {
		return fmt.Errorf("advertisement: %w", err)
	}
	if c.Err != nil || c.Length != advertLen {
		return fmt.Errorf("advertisement of %d octets: %v", c.Length, c.Err)
	}
	adv := parseAdvert(advBuf)
	size := int(adv.size)
	sink, err := pd.Register(make([]byte, size+8), rdmap.LocalWrite, rdmap.WithEndpoint(ep))
	if err != nil {
		return err
	}
	defer sink.Deregister()
	src := make([]byte, size)
	id := s.ID()

	// RDMA Write, then a Read of the same range sees it (RFC 5040 §5.5).
	if err := ep.Write(ctx, pattern(src, id, tagWrite), adv.stag, 0); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := ep.Read(ctx, sink, 0, uint32(size), adv.stag, 0); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if !bytes.Equal(sink.Bytes()[:size], src) {
		return errors.New("read-back after write differs")
	}
	// Send, Send with SE, Send with Invalidate (RFC 5040 §5.3).
	if err := ep.Send(ctx, pattern(src, id, tagSend)); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	se := pattern(make([]byte, size), id, tagSendSE)
	if err := postAndWait(ctx, ep, rdmap.SendWR{ID: 1, Op: rdmap.WRSendSE, Local: se}); err != nil {
		return fmt.Errorf("send with SE: %w", err)
	}
	si := pattern(make([]byte, size), id, tagSendInv)
	if err := postAndWait(ctx, ep, rdmap.SendWR{ID: 2, Op: rdmap.WRSendInv, Local: si, InvalidateSTag: adv.invSTag}); err != nil {
		return fmt.Errorf("send with invalidate: %w", err)
	}
	// Atomics (RFC 7306 §5.1): FetchAdd ×3 then CmpSwap.
	for i := uint64(0); i < 3; i++ {
		orig, err := ep.FetchAdd(ctx, adv.stag, adv.counterOff, fetchAddStep, 0)
		if err != nil {
			return fmt.Errorf("fetchadd: %w", err)
		}
		if orig != i*fetchAddStep {
			return fmt.Errorf("fetchadd returned %d, want %d", orig, i*fetchAddStep)
		}
	}
	orig, err := ep.CmpSwap(ctx, adv.stag, adv.counterOff, 3*fetchAddStep, ^uint64(0), finalCounter, ^uint64(0))
	if err != nil {
		return fmt.Errorf("cmpswap: %w", err)
	}
	if orig != 3*fetchAddStep {
		return fmt.Errorf("cmpswap returned %d, want %d", orig, 3*fetchAddStep)
	}
	// Immediate Data (RFC 7306 §6), then Write with Immediate Data with SE.
	if err := ep.Immediate(ctx, immA(id), false); err != nil {
		return fmt.Errorf("immediate: %w", err)
	}
	if err := ep.WriteImm(ctx, pattern(src, id, tagWriteImm), adv.stag, 0, immB(id), true); err != nil {
		return fmt.Errorf("write-imm: %w", err)
	}
	// The counter read back follows everything before (RFC 5040 §5.5).
	if err := ep.Read(ctx, sink, uint64(size), 8, adv.stag, adv.counterOff); err != nil {
		return fmt.Errorf("read counter: %w", err)
	}
	if v := binary.NativeEndian.Uint64(sink.Bytes()[size:]); v != finalCounter {
		return fmt.Errorf("counter read back %#x, want %#x", v, uint64(finalCounter))
	}
	return ep.Close(ctx)
}

// breakStream injects a tagged DDP segment for an STag the peer never
// advertised, bypassing the local RDMAP checks, and returns the Terminate
// the peer answers with.
func breakStream(ctx context.Context, s *streams.Stream) (*rdmap.TerminateError, []byte, error) {
	ep := s.Endpoint()
	c, err := ep.RecvCQ().Poll(ctx)
	if err != nil || c.Err != nil {
		return nil, nil, fmt.Errorf("advertisement: %v %v", err, c.Err)
	}
	h := ddp.TaggedHeader{Last: true, RsvdULP: rdmap.ControlByte(rdmap.OpWrite), STag: 0xBAD0_0000 | uint32(s.ID()), TO: 0}
	hb := h.Append(nil)
	if err := s.Session().SendSegment(hb, []byte("not for you")); err != nil {
		return nil, hb, fmt.Errorf("inject: %w", err)
	}
	select {
	case <-ep.Done():
	case <-ctx.Done():
		return nil, hb, ctx.Err()
	}
	var te *rdmap.TerminateError
	if !errors.As(ep.Err(), &te) {
		return nil, hb, fmt.Errorf("expected a Terminate from the peer, got %v", ep.Err())
	}
	return te, hb, nil
}

// waitDone waits for an association to end.
func waitDone(t *testing.T, a *sctpllp.Association, side string, d time.Duration, stall bool) {
	t.Helper()
	select {
	case <-a.Done():
		if err := a.Err(); stall && errors.Is(err, sctpllp.ErrKernelShutdownTimeout) {
			t.Logf("KNOWN INTEROP ISSUE (docs/kernel-sctp.md): %s association: %v", side, err)
			return
		}
		assert.NoError(t, a.Err(), "%s association: graceful shutdown expected", side)
	case <-time.After(d):
		_ = a.Abort()
		t.Errorf("%s association still up %v after the last stream ended (RFC 5040 §7)", side, d)
	}
}

func runAllOperations(t *testing.T, newPair Factory, opt Options) {
	ctx, cancel := context.WithTimeout(context.Background(), opt.Timeout)
	defer cancel()
	client, server := newPair(t)
	defer client.Abort()
	defer server.Abort()
	require.GreaterOrEqual(t, client.NumStreams(), opt.Streams+1)
	require.GreaterOrEqual(t, server.NumStreams(), opt.Streams+1)
	t.Logf("backends %s / %s, MULPDU %d / %d", client.Transport().Kind(), server.Transport().Kind(), client.MULPDU(), server.MULPDU())

	dev := rdmap.NewDevice(rdmap.DeviceOptions{})
	cpd, spd := dev.AllocPD(), dev.AllocPD()
	cm := streams.New(client, cpd, streams.Config{})
	sm := streams.New(server, spd, streams.Config{})
	broken := uint16(1 + opt.Streams/2)
	rng := rand.New(rand.NewPCG(opt.Seed, 0x5C7B))
	sizes := make(map[uint16]int, opt.Streams)
	mulpdu := min(client.MULPDU(), server.MULPDU())
	for id := uint16(1); id <= uint16(opt.Streams); id++ {
		sizes[id] = sizeFor(rng, id, mulpdu, opt.MaxSize)
	}

	// Server: accept every session; serve each stream in its own goroutine.
	var swg sync.WaitGroup
	var smu sync.Mutex
	serverErr := map[uint16]error{}
	serverStreams := map[uint16]*streams.Stream{}
	swg.Go(func() {
		for range opt.Streams {
			in, err := sm.Accept(ctx)
			if err != nil {
				smu.Lock()
				serverErr[0] = fmt.Errorf("accept: %w", err)
				smu.Unlock()
				return
			}
			s, err := in.Accept(nil)
			if err != nil {
				smu.Lock()
				serverErr[in.StreamID()] = err
				smu.Unlock()
				continue
			}
			smu.Lock()
			serverStreams[s.ID()] = s
			smu.Unlock()
			swg.Go(func() {
				var err error
				if s.ID() == broken {
					// The advertisement only; the client breaks the stream.
					// Its Send may be flushed by the Terminate that the
					// client's segment provokes before the completion is
					// reported (RFC 5040 §5.5 rule 14 vs §6.2.1).
					err = s.Endpoint().Send(ctx, advert{}.bytes())
					if te := (*rdmap.TerminateError)(nil); errors.As(err, &te) && !te.Remote {
						err = nil
					}
					<-s.Done()
				} else {
					err = serverStream(ctx, spd, s, sizes[s.ID()])
					if err != nil {
						_ = s.Endpoint().Abort()
					}
					<-s.Done()
				}
				smu.Lock()
				serverErr[s.ID()] = err
				smu.Unlock()
			})
		}
	})

	// Client: open every stream concurrently.
	var cwg sync.WaitGroup
	var cmu sync.Mutex
	clientErr := map[uint16]error{}
	var term *rdmap.TerminateError
	var injected []byte
	var clientBroken *streams.Stream
	for id := uint16(1); id <= uint16(opt.Streams); id++ {
		cwg.Go(func() {
			adv := make([]byte, advertLen)
			s, err := cm.Open(ctx, id, streams.OpenOptions{
				PrivateData: fmt.Appendf(nil, "e2e stream %d", id),
				Prepare: func(ep *rdmap.Endpoint) error {
					return ep.PostRecv(rdmap.RecvWR{ID: 100, Buf: adv})
				},
			})
			if err == nil {
				if id == broken {
					var te *rdmap.TerminateError
					var hb []byte
					te, hb, err = breakStream(ctx, s)
					cmu.Lock()
					term, injected, clientBroken = te, hb, s
					cmu.Unlock()
				} else {
					err = clientStream(ctx, cpd, s, adv)
					if err != nil {
						_ = s.Endpoint().Abort()
					}
				}
				<-s.Done()
			}
			cmu.Lock()
			clientErr[id] = err
			cmu.Unlock()
		})
	}
	cwg.Wait()
	cm.Wait()
	swg.Wait()
	sm.Wait()

	for id := uint16(1); id <= uint16(opt.Streams); id++ {
		assert.NoError(t, clientErr[id], "stream %d (size %d), client side", id, sizes[id])
		assert.NoError(t, serverErr[id], "stream %d (size %d), server side", id, sizes[id])
	}
	assert.NoError(t, serverErr[0])

	// The broken stream: RFC 5041 §7.2 (DDP layer, tagged buffer error,
	// invalid STag), the offending DDP header copied into the Terminate
	// (RFC 5040 §4.8), the stream labelled erroneous at both ends (RFC 5040
	// §7).
	if assert.NotNil(t, term, "Terminate for the injected segment") {
		assert.True(t, term.Remote, "the Terminate came from the peer")
		assert.Equal(t, rdmap.TermCode{Layer: ddp.Layer, EType: uint8(ddp.TypeTagged), Code: ddp.CodeInvalidSTag}, term.Code,
			"RFC 5041 §7.2: %v", term.Code)
		assert.Equal(t, rdmap.TermDDPInvalidSTag, term.Code)
		assert.Equal(t, injected, term.DDPHeader, "RFC 5040 §4.8: the terminated DDP header")
	}
	if assert.NotNil(t, clientBroken) {
		assert.True(t, clientBroken.Erroneous(), "client labelled stream %d erroneous", broken)
	}
	smu.Lock()
	sb := serverStreams[broken]
	smu.Unlock()
	if assert.NotNil(t, sb) {
		assert.True(t, sb.Erroneous(), "server labelled stream %d erroneous", broken)
		var te *rdmap.TerminateError
		if assert.ErrorAs(t, sb.Err(), &te) {
			assert.False(t, te.Remote, "the server sent the Terminate")
		}
	}
	for id, s := range serverStreams {
		if id != broken {
			assert.False(t, s.Erroneous(), "intact stream %d labelled erroneous", id)
		}
	}
	cs, ss := cm.Stats(), sm.Stats()
	assert.Equal(t, uint64(opt.Streams), cs.Opened)
	assert.Equal(t, uint64(1), cs.Erroneous)
	assert.Equal(t, uint64(1), ss.Erroneous)

	// Every stream is closed or erroneous: the association shuts down.
	waitDone(t, client, "client", 20*time.Second, opt.ShutdownStall)
	waitDone(t, server, "server", 20*time.Second, opt.ShutdownStall)
}

// runCloseAll opens streams without traffic and closes them all from the
// client: the association must shut down gracefully on both sides
// (RFC 5040 §7, RFC 5043 §6.4).
func runCloseAll(t *testing.T, newPair Factory, opt Options) {
	ctx, cancel := context.WithTimeout(context.Background(), opt.Timeout)
	defer cancel()
	client, server := newPair(t)
	defer client.Abort()
	defer server.Abort()
	dev := rdmap.NewDevice(rdmap.DeviceOptions{})
	cm := streams.New(client, dev.AllocPD(), streams.Config{})
	sm := streams.New(server, dev.AllocPD(), streams.Config{})
	n := min(opt.Streams, 4)

	var swg sync.WaitGroup
	accepted := make(chan *streams.Stream, n)
	swg.Go(func() {
		for range n {
			in, err := sm.Accept(ctx)
			if err != nil {
				return
			}
			if s, err := in.Accept(nil); err == nil {
				accepted <- s
			}
		}
	})
	var opened []*streams.Stream
	for id := uint16(1); id <= uint16(n); id++ {
		s, err := cm.Open(ctx, id, streams.OpenOptions{})
		require.NoError(t, err)
		opened = append(opened, s)
	}
	swg.Wait()
	require.Len(t, accepted, n)
	select {
	case <-client.Done():
		t.Fatal("association ended while streams were open")
	case <-server.Done():
		t.Fatal("association ended while streams were open")
	default:
	}
	t0 := time.Now()
	for _, s := range opened {
		require.NoError(t, s.Endpoint().Close(ctx))
	}
	for range n {
		s := <-accepted
		select {
		case <-s.Done():
			assert.ErrorIs(t, s.Err(), rdmap.ErrPeerClosed)
			assert.False(t, s.Erroneous())
		case <-ctx.Done():
			t.Fatal("server stream not closed")
		}
	}
	cm.Wait()
	sm.Wait()
	waitDone(t, client, "client", 20*time.Second, opt.ShutdownStall)
	waitDone(t, server, "server", 20*time.Second, opt.ShutdownStall)
	// Closing is prompt: no stage waits for a timeout (stream reset,
	// linger, quiet time).
	t.Logf("%d streams closed and the association shut down in %v", n, time.Since(t0).Round(time.Millisecond))
	if !opt.ShutdownStall {
		assert.Less(t, time.Since(t0), 5*time.Second, "close took a timeout somewhere")
	}
}
