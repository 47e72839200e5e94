package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// UsesHandler reports whether test t (latency variant or not) takes its
// completions in a CQ handler (rdmap.CQ.SetHandler) where they are made,
// unless the Setup asks for events (flagEvents): the latency ping-pongs
// of Send and Write with Immediate, and the bandwidth runs of Read and
// the atomics, whose every completion an arriving Response makes. The
// others wait for each completion in the test's goroutine: bandwidth
// Writes and Sends too, whose completions the endpoint's transmit
// goroutine makes — handing them to a handler there adds the posting to
// that goroutine's work for each 64 KiB message, and alternated pairs of
// benchmarks showed no gain (docs/benchmarks.md).
func UsesHandler(t Test, latency bool) bool {
	if latency {
		return t == TestSend || t == TestWriteImm
	}
	return t == TestRead || t.Atomic()
}

// handled reports whether a latency ping-pong takes its completions in a
// receive CQ handler.
func (s setupMsg) handled() bool {
	return s.Latency() && !s.Events() && UsesHandler(s.Test, true)
}

// handledBW reports whether a bandwidth test takes its completions in a
// send CQ handler.
func (s setupMsg) handledBW() bool {
	return !s.Latency() && !s.Events() && UsesHandler(s.Test, false)
}

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
	// comps receives completions (PollN: one lock per call).
	comps [4]rdmap.Completion
}

func newPong(c *conn) *pong { return &pong{c: c, end: make(chan struct{})} }

// finishLocked ends the run with err (nil: done); mu is held.
func (p *pong) finishLocked(err error) {
	if !p.over {
		p.over, p.err = true, err
		close(p.end)
	}
}

// handler returns a CQ handler that takes cq's completions (PollN: one
// lock per poll) and gives each to take, mu held, until take returns
// false or the run ended; then, once cq is empty, it calls after (if not
// nil), mu held.
func (p *pong) handler(cq *rdmap.CQ, take func(rdmap.Completion) bool, after func()) func() {
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for !p.over {
			n := cq.PollN(p.comps[:])
			for i, comp := range p.comps[:n] {
				if !take(comp) {
					p.keepLocked(cq, p.comps[i+1:n])
					return
				}
			}
			if n < len(p.comps) {
				if after != nil {
					after()
				}
				return
			}
		}
	}
}

// keepLocked keeps the receive completions a handler took from cq after
// the one that ended the run (PollN takes up to four at once): the peer's
// Fin and the Report it sends next can arrive together, and the Report is
// then the test goroutine's to receive (conn.recv returns kept completions
// first). Without it the Report was lost in about 3% of bidirectional
// runs of Write with Immediate over MPA inside TLS, whose records bring
// both in one read. The test goroutine reads them after wait, which takes
// mu after the handler is removed. mu is held.
func (p *pong) keepLocked(cq *rdmap.CQ, rest []rdmap.Completion) {
	if len(rest) == 0 || cq != p.c.ep.Config().RecvCQ {
		return
	}
	if p.c.kept == nil {
		p.c.kept = new([]rdmap.Completion)
	}
	*p.c.kept = append(*p.c.kept, rest...)
}

// drainSendsLocked takes what the send CQ holds: the messages are posted
// unsignaled (rdmap.SendWR.Unsignaled, as perftest signals only every
// cq_mod-th), so a completion there is a failure. It runs when the run
// ends: a failed Send takes the endpoint down, which flushes the posted
// receive, and the handler sees that first. mu is held.
func (p *pong) drainSendsLocked() {
	cq := p.c.ep.Config().SendCQ
	for {
		n := cq.PollN(p.comps[:])
		for _, comp := range p.comps[:n] {
			if comp.Err != nil {
				p.finishLocked(p.c.cause(fmt.Errorf("%v: %w", comp.Op, comp.Err)))
			}
		}
		if n < len(p.comps) {
			return
		}
	}
}

// wait blocks until the run ended, ctx ended or the endpoint went down,
// and removes the receive CQ's handler. The messages were posted
// unsignaled: the blocking Send that follows (the Fin, the Report)
// completes only after every one of them (RFC 5040 §5.5 rule 15).
func (p *pong) wait(ctx context.Context) error {
	_ = p.waitCQ(ctx, p.c.ep.Config().RecvCQ)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drainSendsLocked() // may record a failed Send as the cause
	return p.err
}

// waitCQ waits as wait does and removes cq's handler.
func (p *pong) waitCQ(ctx context.Context, cq *rdmap.CQ) error {
	ep := p.c.ep
	var err error
	select {
	case <-p.end:
	case <-ctx.Done():
		err = ctx.Err()
	case <-ep.Done():
		err = p.c.cause(fmt.Errorf("%w", rdmap.ErrFlushed))
	}
	cq.SetHandler(nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked(err)
	return p.err
}

// activePong is the measuring side of a handled ping-pong (Setup.handled):
// operation k is the k-th message sent; it completes when the answer
// arrives, whose Immediate Data (Write with Immediate) names it.
func (c *conn) activePong(ctx context.Context) (Report, error) {
	s := c.setup
	p := newPong(c)
	t := c.newTally(1, true)
	local := c.mr.Bytes()[:s.Size:s.Size]
	batch := make([]rdmap.SendWR, 0, 1)
	// postLocked posts operation seq, stamped now: one clock reading per
	// round trip, as perftest's latency loop takes one timestamp per
	// iteration (the answer's arrival is the next post's start).
	postLocked := func(seq uint64, now time.Time) error {
		batch = c.appendOps(batch[:0], seq, local)
		batch[0].Unsignaled = true // the answer completes the operation
		t.stampAt(seq, seq+1, now)
		if _, err := c.ep.PostSend(batch...); err != nil {
			return c.cause(err)
		}
		return nil
	}
	// answeredLocked takes one receive completion; false ends the run.
	answeredLocked := func(comp rdmap.Completion) bool {
		now := time.Now()
		if comp.Err != nil {
			p.finishLocked(c.cause(comp.Err))
			return false
		}
		seq := t.done
		if comp.HasImm {
			seq = comp.Imm
		}
		if err := t.complete(seq, seq, now); err != nil {
			p.finishLocked(err)
			return false
		}
		if t.stoppingAtTime(t.done, now) {
			if err := c.repost(comp.WRID); err != nil {
				p.finishLocked(err)
				return false
			}
			p.finishLocked(nil)
			return false
		}
		// The next message leaves before the buffer is posted again
		// (reposted below, off the round trip's path): its answer can only
		// come after it, and more receives than the one in use are posted
		// (recvCount), so the answer always finds a buffer.
		if err := postLocked(t.done, now); err != nil {
			p.finishLocked(err)
			return false
		}
		if err := c.repost(comp.WRID); err != nil {
			p.finishLocked(err)
			return false
		}
		return true
	}
	recvCQ := c.ep.Config().RecvCQ
	recvCQ.SetHandler(p.handler(recvCQ, answeredLocked, nil))
	p.mu.Lock()
	if err := postLocked(0, time.Now()); err != nil {
		p.finishLocked(err)
	}
	p.mu.Unlock()
	return p.finishRun(ctx, t, p.wait(ctx), func() uint64 { return t.done })
}

// finishRun closes a handled active run that waited with err: its Report, and
// unless the run failed the Fin telling the peer how many operations were
// posted (sent, read under mu).
func (p *pong) finishRun(ctx context.Context, t *tally, err error, sent func() uint64) (Report, error) {
	p.mu.Lock()
	r, n := t.report(), sent()
	p.mu.Unlock()
	if err != nil {
		return r, err
	}
	return r, p.c.sendFin(ctx, n)
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
	// answeredLocked takes one receive completion; false ends the run.
	answeredLocked := func(comp rdmap.Completion) bool {
		if p.passiveEndLocked(comp, recvd, start, &fin) {
			return false
		}
		recvd++
		wr := rdmap.SendWR{Op: rdmap.WRSend, Local: reply, Unsignaled: true}
		if s.Test == TestWriteImm {
			wr = rdmap.SendWR{Op: rdmap.WRWriteImm, Local: reply, RemoteSTag: c.peer.STag, Imm: comp.Imm, Unsignaled: true}
		}
		if _, err := c.ep.PostSend(wr); err != nil {
			p.finishLocked(c.cause(err))
			return false
		}
		// Reposted after the answer left, off the round trip's path: the
		// next message comes only after the answer, and recvCount posts
		// more receives than the one in use, so it always finds a buffer.
		if err := c.repost(comp.WRID); err != nil {
			p.finishLocked(err)
			return false
		}
		if c.ctr != nil {
			c.ctr.Ops.Add(1)
			c.ctr.Bytes.Add(s.opBytes())
		}
		return true
	}
	return p.passiveRun(ctx, answeredLocked, &recvd, &fin, start)
}

// passiveEndLocked takes a receive completion that may end a handled
// passive run, an error or the peer's Fin (which must count the messages
// that arrived, recvd), into fin; it reports whether the run ended. mu is
// held.
func (p *pong) passiveEndLocked(comp rdmap.Completion, recvd uint64, start time.Time, fin *Report) bool {
	if comp.Err != nil {
		p.finishLocked(p.c.cause(comp.Err))
		return true
	}
	if !comp.HasImm || comp.Imm&finBit == 0 {
		return false
	}
	n := comp.Imm &^ finBit
	*fin = Report{Ops: n, Bytes: n * p.c.setup.opBytes(), Elapsed: time.Since(start)}
	var err error
	if n != recvd {
		fin.Status = statusVerifyError
		err = fmt.Errorf("peer sent %d messages, %d arrived", n, recvd)
	}
	p.finishLocked(err)
	return true
}

// passiveRun makes take the receive CQ's handler, waits for the run's end
// and returns the passive side's Report: the Fin's (*fin), or what arrived
// (*recvd, read under mu) if the run failed first.
func (p *pong) passiveRun(ctx context.Context, take func(rdmap.Completion) bool, recvd *uint64, fin *Report, start time.Time) (Report, error) {
	recvCQ := p.c.ep.Config().RecvCQ
	recvCQ.SetHandler(p.handler(recvCQ, take, nil))
	err := p.wait(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if fin.Status != 0 {
			return *fin, err
		}
		return Report{Ops: *recvd, Bytes: *recvd * p.c.setup.opBytes(), Elapsed: time.Since(start)}, err
	}
	return *fin, nil
}

// passiveCredited is the receiving side of a bandwidth Send or Write with
// Immediate Data (Setup.credited) unless the Setup asks for events: a
// receive CQ handler takes each completion on the goroutine that placed
// the message, posts its buffer again and returns a credit every half
// window, as ib_send_bw's server polls its CQ and reposts at once. Waiting
// for each completion in the test's goroutine instead cost a goroutine
// wake-up per message (docs/benchmarks.md, notes).
func (c *conn) passiveCredited(ctx context.Context) (Report, error) {
	s := c.setup
	p := newPong(c)
	every := uint64(max(s.rxDepth()/2, 1))
	var recvd, since uint64
	var fin Report
	start := time.Now()
	// takeLocked takes one receive completion; false ends the run.
	takeLocked := func(comp rdmap.Completion) bool {
		if p.passiveEndLocked(comp, recvd, start, &fin) {
			return false
		}
		// The buffer goes back before the credit that lets the peer use it.
		if err := c.repost(comp.WRID); err != nil {
			p.finishLocked(err)
			return false
		}
		recvd++
		if c.ctr != nil {
			c.ctr.Ops.Add(1)
			c.ctr.Bytes.Add(s.opBytes())
		}
		if since++; since >= every {
			since = 0
			wr := rdmap.SendWR{Op: rdmap.WRImmediate, Imm: recvd, Unsignaled: true}
			if _, err := c.ep.PostSend(wr); err != nil {
				p.finishLocked(c.cause(err))
				return false
			}
		}
		return true
	}
	return p.passiveRun(ctx, takeLocked, &recvd, &fin, start)
}

// activeHandled is the bandwidth variant of a test that takes its
// completions in a CQ handler (Setup.handledBW: Read, the atomics): the
// send CQ's handler takes each completion on the goroutine that received
// the Response and posts the next operations from there, as perftest
// polls its CQ and posts at once. The test's goroutine posts the first
// operations and waits.
func (c *conn) activeHandled(ctx context.Context) (Report, error) {
	s := c.setup
	p := newPong(c)
	d := s.depth()
	t := c.newTally(d, false)
	var posted uint64
	local := c.mr.Bytes()[:s.Size:s.Size]
	batch := make([]rdmap.SendWR, 0, d)
	every := c.postEvery()
	// pumpLocked posts what may go now and ends the run when everything
	// posted completed and no more may go; mu is held.
	pumpLocked := func() {
		if p.over {
			return
		}
		batch = batch[:0]
		ops := posted
		if !t.listReady(posted, every) {
			return
		}
		for ; ops-t.done < uint64(d) && !t.stoppingAt(ops); ops++ {
			batch = c.appendOps(batch, ops, local)
		}
		c.signal(t, batch)
		if ops == posted {
			if t.done == posted && t.stoppingAt(posted) {
				p.finishLocked(nil)
			}
			return
		}
		t.stamp(posted, ops)
		posted = ops
		if _, err := c.ep.PostSend(batch...); err != nil {
			p.finishLocked(c.cause(err))
		}
	}
	// completedLocked takes one send completion; false ends the run.
	completedLocked := func(comp rdmap.Completion) bool {
		err := comp.Err
		if err != nil {
			err = c.cause(fmt.Errorf("%v: %w", comp.Op, err))
		} else {
			err = t.completeThrough(comp.WRID>>1, comp.Orig, time.Now())
		}
		if err != nil {
			p.finishLocked(err)
			return false
		}
		return true
	}
	sendCQ := c.ep.Config().SendCQ
	sendCQ.SetHandler(p.handler(sendCQ, completedLocked, pumpLocked))
	p.mu.Lock()
	pumpLocked()
	p.mu.Unlock()
	return p.finishRun(ctx, t, p.waitCQ(ctx, sendCQ), func() uint64 { return posted })
}
