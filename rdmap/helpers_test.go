package rdmap

import (
	"context"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/llptest"
	"github.com/sctp-rdma/sctp-rdma/llp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pair is two connected, started endpoints in one PD each, on one device.
type pair struct {
	dev        *Device
	pdA, pdB   *PD
	a, b       *Endpoint
	pipeA      *llptest.Pipe
	pipeB      *llptest.Pipe
	cqA, cqB   *CQ
	rcqA, rcqB *CQ
}

func newPair(t testing.TB, cfgA, cfgB EndpointConfig, setup ...func(p *pair)) *pair {
	t.Helper()
	p := &pair{dev: newDevice(0, 0)}
	p.pdA, p.pdB = p.dev.AllocPD(), p.dev.AllocPD()
	p.pipeA, p.pipeB = llptest.NewPair()
	var err error
	p.a, err = p.pdA.NewEndpoint(p.pipeA, cfgA)
	require.NoError(t, err)
	p.b, err = p.pdB.NewEndpoint(p.pipeB, cfgB)
	require.NoError(t, err)
	p.cqA, p.cqB = p.a.Config().SendCQ, p.b.Config().SendCQ
	p.rcqA, p.rcqB = p.a.Config().RecvCQ, p.b.Config().RecvCQ
	for _, f := range setup {
		f(p)
	}
	require.NoError(t, p.a.Start())
	require.NoError(t, p.b.Start())
	t.Cleanup(func() { p.close(t) })
	return p
}

func (p *pair) close(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { _ = p.b.Close(ctx); close(done) }()
	_ = p.a.Close(ctx)
	<-done
	waitDone(t, p.a)
	waitDone(t, p.b)
	<-p.pipeA.Done()
	<-p.pipeB.Done()
}

// postedRecvs is the number of receive buffers DDP holds for e's Send
// queue (its queues are guarded by e.mu, ddp.NewReceiverGuarded).
func postedRecvs(e *Endpoint) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.recv.Posted(iwarpwire.RDMAPQNSend)
}

func waitDone(t testing.TB, e *Endpoint) {
	t.Helper()
	select {
	case <-e.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("endpoint did not finish")
	}
}

func ctx5(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func poll(t testing.TB, cq *CQ) Completion {
	t.Helper()
	c, err := cq.Poll(ctx5(t))
	require.NoError(t, err)
	return c
}

// wire is the attacker's side of a pipe: it records every segment the
// victim sends and injects crafted ones, tracking MSNs per queue.
type wire struct {
	pipe *llptest.Pipe
	msn  [8]uint32
	segs chan []byte
	done chan error
}

func newWire(p *llptest.Pipe) *wire {
	w := &wire{pipe: p, segs: make(chan []byte, 100000), done: make(chan error, 1)}
	p.Start(w)
	return w
}

func (w *wire) HandleSegment(seg []byte) error {
	w.segs <- append([]byte(nil), seg...)
	return nil
}

func (w *wire) HandleClosed(err error) { w.done <- err }

func (w *wire) untagged(ctl uint8, inv uint32, qn uint32, payload []byte) []byte {
	w.msn[qn%8]++
	h := iwarpwire.DDPUntaggedHeader{Last: true, QN: qn, MSN: w.msn[qn%8]}
	h.RsvdULP[0] = ctl
	h.RsvdULP[1], h.RsvdULP[2], h.RsvdULP[3], h.RsvdULP[4] = byte(inv>>24), byte(inv>>16), byte(inv>>8), byte(inv)
	return append(h.Append(nil), payload...)
}

func tagged(ctl uint8, stag uint32, to uint64, payload []byte) []byte {
	h := iwarpwire.DDPTaggedHeader{Last: true, RsvdULP: ctl, STag: stag, TO: to}
	return append(h.Append(nil), payload...)
}

func (w *wire) inject(t testing.TB, seg []byte) {
	t.Helper()
	require.NoError(t, w.pipe.Inject(seg))
}

// terminate waits for the victim's Terminate and returns it with its
// segment; it fails the test on timeout.
func (w *wire) terminate(t testing.TB) (termHeader, []byte) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case seg := <-w.segs:
			if tm, ok := asTerminate(seg); ok {
				return tm, seg
			}
		case <-timeout:
			t.Fatal("no Terminate on the wire")
		}
	}
}

func asTerminate(seg []byte) (termHeader, bool) {
	if len(seg) < iwarpwire.DDPUntaggedHeaderLen || seg[0]&0x80 != 0 {
		return termHeader{}, false
	}
	h, n, err := iwarpwire.ParseDDPUntaggedHeader(seg)
	if err != nil || h.QN != iwarpwire.RDMAPQNTerminate || h.RsvdULP[0] != iwarpwire.RDMAPControlByte(iwarp.RDMAPOpTerminate) || !h.Last || h.MO != 0 {
		return termHeader{}, false
	}
	tm, _, err := parseTermHeader(seg[n:])
	if err != nil {
		return termHeader{}, false
	}
	return tm, true
}

// finish closes the attacker side and waits for both ends to stop,
// returning how many Terminates the victim sent in total.
func (w *wire) finish(t testing.TB, victim *Endpoint, victimPipe *llptest.Pipe, seen int) int {
	t.Helper()
	_ = w.pipe.Close()
	waitDone(t, victim)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("attacker pipe not closed")
	}
	<-victimPipe.Done()
	<-w.pipe.Done()
	n := seen
	for {
		select {
		case seg := <-w.segs:
			if _, ok := asTerminate(seg); ok {
				n++
			}
		default:
			return n
		}
	}
}

// victim is one started endpoint facing a raw attacker wire.
type victim struct {
	dev  *Device
	pd   *PD
	ep   *Endpoint
	pipe *llptest.Pipe
	w    *wire
}

func newVictim(t testing.TB, cfg EndpointConfig, setup func(v *victim)) *victim {
	t.Helper()
	v := &victim{dev: newDevice(0, 0)}
	v.pd = v.dev.AllocPD()
	a, b := llptest.NewPair()
	v.pipe = a
	var err error
	v.ep, err = v.pd.NewEndpoint(a, cfg)
	require.NoError(t, err)
	if setup != nil {
		setup(v)
	}
	require.NoError(t, v.ep.Start())
	v.w = newWire(b)
	return v
}

func newPipes() (*llptest.Pipe, *llptest.Pipe) { return llptest.NewPair() }

// startOver starts an endpoint over s and its peer over peerStream (the
// other end of s's pipe), calling prepare first (posting receives, say),
// and aborts both when the test ends.
func startOver(t testing.TB, s, peerStream llp.Stream, prepare func(ep, peer *Endpoint)) (ep, peer *Endpoint) {
	t.Helper()
	ep, err := newDevice(0, 0).AllocPD().NewEndpoint(s, EndpointConfig{})
	require.NoError(t, err)
	peer, err = newDevice(0, 0).AllocPD().NewEndpoint(peerStream, EndpointConfig{})
	require.NoError(t, err)
	if prepare != nil {
		prepare(ep, peer)
	}
	require.NoError(t, ep.Start())
	require.NoError(t, peer.Start())
	t.Cleanup(func() {
		_ = ep.Abort()
		_ = peer.Abort()
		waitDone(t, ep)
		waitDone(t, peer)
	})
	return ep, peer
}

// waitIdleTx waits until the endpoint's start is over (the transmit loop
// sent the RTR and ended): the send queue is idle.
func waitIdleTx(t *testing.T, e *Endpoint) {
	t.Helper()
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.txReady && !e.issuing && !e.txRunning
	}, 5*time.Second, time.Millisecond)
}
