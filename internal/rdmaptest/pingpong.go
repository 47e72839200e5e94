// Package rdmaptest holds test helpers for code built on rdmap: a Send
// ping-pong driven by CQ handlers, for benchmarks that measure the CPU the
// RDMA layers spend per round trip over an LLP that delivers on the
// benchmark's goroutine.
package rdmaptest

import (
	"fmt"
	"runtime"

	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// PingPong is a Send ping-pong between two endpoints whose both sides
// answer from their receive CQ's handler (rdmap.CQ.SetHandler): A sends,
// B answers each Send with one of the same size, A counts a round and
// sends again, until Rounds reaches the number asked for. The Sends are
// unsignaled, as perftest signals only every cq_mod-th: a completion on
// either send CQ is a failure. The handlers run on whatever goroutine
// delivers the LLP's segments; a PingPong is not safe for concurrent use
// beyond that.
type PingPong struct {
	// Rounds is the number of round trips completed.
	Rounds int
	// Err is the first failure, if any.
	Err error

	a, b *rdmap.Endpoint
	n    int
	msg  []byte
}

// newPingPong prepares a ping-pong of n round trips of size-octet Sends
// between a and b, which must not be started yet: it posts a receive on
// each and sets both receive CQs' handlers. Start a and b, then call Serve.
func newPingPong(a, b *rdmap.Endpoint, size, n int) (*PingPong, error) {
	p := &PingPong{a: a, b: b, n: n, msg: make([]byte, size)}
	for _, e := range []*rdmap.Endpoint{a, b} {
		buf := make([]byte, size)
		if err := e.PostRecv(0, buf); err != nil {
			return nil, err
		}
		e.Config().RecvCQ.SetHandler(p.answer(e, buf, e == a))
	}
	return p, nil
}

// StartPingPong makes an endpoint over each of sa and sb (one device, a
// protection domain for each, default configuration), prepares a
// ping-pong of n round trips of size-octet Sends between them (NewPingPong)
// and starts them. Abort ends both.
func StartPingPong(sa, sb llp.Stream, size, n int) (*PingPong, error) {
	dev := new(rdmap.Device)
	a, err := dev.AllocPD().NewEndpoint(sa, rdmap.EndpointConfig{})
	if err != nil {
		return nil, err
	}
	b, err := dev.AllocPD().NewEndpoint(sb, rdmap.EndpointConfig{})
	if err != nil {
		return nil, err
	}
	p, err := newPingPong(a, b, size, n)
	if err != nil {
		return nil, err
	}
	if err := a.Start(); err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		_ = a.Abort()
		return nil, err
	}
	return p, nil
}

// Abort removes the handlers (the flushes an abort makes are nobody's to
// answer) and aborts both endpoints, and waits until they are done.
func (p *PingPong) Abort() {
	p.a.Config().RecvCQ.SetHandler(nil)
	p.b.Config().RecvCQ.SetHandler(nil)
	_ = p.a.Abort()
	_ = p.b.Abort()
	<-p.a.Done()
	<-p.b.Done()
}

// Serve posts A's first Send. The first may wait for A's transmit
// goroutine (an endpoint issues requests itself once its start is over);
// the handlers issue the later ones, on the delivering goroutine.
func (p *PingPong) serve() error {
	_, err := p.a.PostSend(rdmap.SendWR{Op: rdmap.WRSend, Local: p.msg, Unsignaled: true})
	return err
}

// Run posts A's first Send (Serve) and drives the ping-pong with step,
// which delivers one segment waiting in the LLP, if any, on the caller's
// goroutine and reports whether there was one, until the rounds are done:
// the handlers then run on the caller's goroutine. It yields the processor
// while nothing waits (the first Send may wait for A's transmit goroutine)
// and gives up after a million idle steps.
func (p *PingPong) Run(step func() bool) error {
	if err := p.serve(); err != nil {
		return err
	}
	for idle := 0; !p.done(); {
		if step() {
			idle = 0
			continue
		}
		if idle++; idle > 1e6 {
			return fmt.Errorf("rdmaptest: ping-pong stalled after %d rounds", p.Rounds)
		}
		runtime.Gosched()
	}
	return p.Err
}

// Done reports whether the ping-pong completed its rounds or failed.
func (p *PingPong) done() bool { return p.Rounds >= p.n || p.Err != nil }

// drain takes what cq holds: nothing is expected there.
func (p *PingPong) drain(cq *rdmap.CQ, comps []rdmap.Completion) {
	for n := cq.PollN(comps); n > 0; n = cq.PollN(comps) {
		if p.Err == nil {
			p.Err = fmt.Errorf("rdmaptest: send completion %+v", comps[0])
		}
	}
}

// answer is e's receive CQ handler: it reposts buf for each message and
// answers it (A counts the round and stops after the last).
func (p *PingPong) answer(e *rdmap.Endpoint, buf []byte, count bool) func() {
	var comps [4]rdmap.Completion // each handler its own
	return func() {
		p.drain(e.Config().SendCQ, comps[:])
		for {
			n := e.Config().RecvCQ.PollN(comps[:])
			for _, c := range comps[:n] {
				if c.Err != nil {
					p.Err = c.Err
					return
				}
				if count {
					p.Rounds++
				}
				if err := e.PostRecv(0, buf); err != nil {
					p.Err = err
					return
				}
				if count && p.Rounds >= p.n {
					return
				}
				if _, err := e.PostSend(rdmap.SendWR{Op: rdmap.WRSend, Local: p.msg, Unsignaled: true}); err != nil {
					p.Err = err
					return
				}
			}
			if n < len(comps) {
				return
			}
		}
	}
}
