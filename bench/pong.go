package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// handled reports whether a latency ping-pong takes its completions in a
// CQ handler (rdmap.CQ.SetHandler) rather than in the test's goroutine
// (FlagEvents).
func (s Setup) handled() bool { return s.pongMode() && !s.Events() }

// pong is the state of a ping-pong driven by a receive CQ handler: the
// handler takes each arriving message's completion on the goroutine that
// received it and posts the next message from there, as perftest's
// ib_send_lat polls its CQ and posts at once — no goroutine is woken per
// message. The test's goroutine posts the first message and waits for
// the end. mu serialises the handler's calls with the test's goroutine
// (calls of one handler never overlap; the race detector cannot see the
// order the network imposes between a post and its answer).
type pong struct {
	c   *conn
	mu  sync.Mutex
	end chan struct{}
	err error
	// over: the run ended (end closed); later calls only drain.
	over bool
	// sent counts posted messages, sendsDone their send completions.
	sent, sendsDone uint64
}

func newPong(c *conn) *pong { return &pong{c: c, end: make(chan struct{})} }

// finishLocked ends the run with err (nil: done); mu is held.
func (p *pong) finishLocked(err error) {
	if !p.over {
		p.over, p.err = true, err
		close(p.end)
	}
}

// drainSendsLocked takes the send completions; mu is held.
func (p *pong) drainSendsLocked() {
	cq := p.c.ep.SendCQ()
	for {
		comp, ok := cq.TryPoll()
		if !ok {
			return
		}
		p.sendsDone++
		if comp.Err != nil {
			p.finishLocked(p.c.cause(fmt.Errorf("%v: %w", comp.Op, comp.Err)))
		}
	}
}

// wait blocks until the run ended, ctx ended or the endpoint went down,
// removes the handler and waits for the send completions of every
// message posted, so that the stream's CQs are empty for what follows.
func (p *pong) wait(ctx context.Context) error {
	ep := p.c.ep
	var err error
	select {
	case <-p.end:
	case <-ctx.Done():
		err = ctx.Err()
	case <-ep.Done():
		err = p.c.cause(fmt.Errorf("%w", rdmap.ErrFlushed))
	}
	ep.RecvCQ().SetHandler(nil)
	p.mu.Lock()
	p.finishLocked(err)
	p.drainSendsLocked()
	err, left := p.err, p.sent-p.sendsDone
	p.mu.Unlock()
	if err != nil {
		return err
	}
	for ; left > 0; left-- {
		comp, perr := ep.SendCQ().Poll(ctx)
		if perr != nil {
			return p.c.cause(perr)
		}
		if comp.Err != nil {
			return p.c.cause(fmt.Errorf("%v: %w", comp.Op, comp.Err))
		}
	}
	return nil
}

// activePong is the measuring side of a handled ping-pong (Setup.handled):
// operation k is the k-th message sent; it completes when the answer
// arrives, whose Immediate Data (Write with Immediate) names it.
func (c *conn) activePong(ctx context.Context) (Report, error) {
	s := c.setup
	p := newPong(c)
	lat := newLatRecorder(true)
	local := c.mr.Bytes()[:s.Size:s.Size]
	var done uint64
	var postedAt time.Time
	batch := make([]rdmap.SendWR, 0, 1)
	start := time.Now()
	stopping := func(n uint64) bool {
		if s.Iters > 0 {
			return n >= s.Iters
		}
		return time.Since(start) >= s.Duration
	}
	postLocked := func(seq uint64) error {
		batch = c.appendOps(batch[:0], seq, local)
		postedAt = time.Now() // stamped before the post (see active)
		if _, err := c.ep.PostSends(batch); err != nil {
			return c.cause(err)
		}
		p.sent++
		return nil
	}
	recvCQ := c.ep.RecvCQ()
	recvCQ.SetHandler(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.drainSendsLocked()
		for !p.over {
			comp, ok := recvCQ.TryPoll()
			if !ok {
				return
			}
			now := time.Now()
			if comp.Err != nil {
				p.finishLocked(c.cause(comp.Err))
				return
			}
			seq := done
			if comp.HasImm {
				seq = comp.Imm
			}
			if seq != done {
				p.finishLocked(fmt.Errorf("answer to operation %d, expected %d (RFC 5040 §5.5 rule 15)", seq, done))
				return
			}
			lat.record(now.Sub(postedAt))
			done++
			if c.ctr != nil {
				c.ctr.Ops.Add(1)
				c.ctr.Bytes.Add(s.opBytes())
			}
			if err := c.repost(comp.WRID); err != nil {
				p.finishLocked(err)
				return
			}
			if stopping(done) {
				p.finishLocked(nil)
				return
			}
			if err := postLocked(done); err != nil {
				p.finishLocked(err)
				return
			}
		}
	})
	p.mu.Lock()
	err := postLocked(0)
	if err != nil {
		p.finishLocked(err)
	}
	p.mu.Unlock()
	err = p.wait(ctx)
	p.mu.Lock()
	elapsed := time.Since(start)
	r := Report{Ops: done, Bytes: done * s.opBytes(), Elapsed: elapsed, Lat: lat.summary(), hist: lat}
	p.mu.Unlock()
	if err != nil {
		return r, err
	}
	if err := c.ep.Immediate(ctx, finBit|done, false); err != nil {
		return r, c.cause(fmt.Errorf("fin: %w", err))
	}
	return r, nil
}

// passivePong answers a handled ping-pong: each message is answered from
// the handler with one of the same size, until the active side's Fin.
func (c *conn) passivePong(ctx context.Context) (Report, error) {
	s := c.setup
	p := newPong(c)
	var recvd uint64
	var fin Report
	reply := c.mr.Bytes()[:s.Size]
	start := time.Now()
	recvCQ := c.ep.RecvCQ()
	recvCQ.SetHandler(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.drainSendsLocked()
		for !p.over {
			comp, ok := recvCQ.TryPoll()
			if !ok {
				return
			}
			if comp.Err != nil {
				p.finishLocked(c.cause(comp.Err))
				return
			}
			if comp.HasImm && comp.Imm&finBit != 0 {
				n := comp.Imm &^ finBit
				fin = Report{Ops: n, Bytes: n * s.opBytes(), Elapsed: time.Since(start)}
				var err error
				if n != recvd {
					fin.Status = StatusVerifyError
					err = fmt.Errorf("peer sent %d messages, %d arrived", n, recvd)
				}
				p.finishLocked(err)
				return
			}
			if err := c.repost(comp.WRID); err != nil {
				p.finishLocked(err)
				return
			}
			recvd++
			if c.ctr != nil {
				c.ctr.Ops.Add(1)
				c.ctr.Bytes.Add(s.opBytes())
			}
			wr := rdmap.SendWR{Op: rdmap.WRSend, Local: reply}
			if s.Test == TestWriteImm {
				wr = rdmap.SendWR{Op: rdmap.WRWriteImm, Local: reply, RemoteSTag: c.peer.STag, Imm: comp.Imm}
			}
			if err := c.ep.PostSend(wr); err != nil {
				p.finishLocked(c.cause(err))
				return
			}
			p.sent++
		}
	})
	err := p.wait(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if fin.Status != 0 {
			return fin, err
		}
		return Report{Ops: recvd, Bytes: recvd * s.opBytes(), Elapsed: time.Since(start)}, err
	}
	return fin, nil
}
