package workload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// op is one operation of the client.
type op uint8

const (
	opWrite       op = iota // RDMA Write, then a Read of it back (RFC 5040 §5.1, §5.2)
	opSend                  // Send (RFC 5040 §5.3)
	opSendSE                // Send with Solicited Event
	opSendInv               // Send with Invalidate
	opSendSEInv             // Send with Solicited Event and Invalidate
	opFetchAdd              // Atomic FetchAdd (RFC 7306 §5.1)
	opCmpSwap               // Atomic CmpSwap (RFC 7306 §5.1)
	opImmediate             // Immediate Data (RFC 7306 §6)
	opWriteImm              // Write with Immediate Data (RFC 7306 §6)
	opReadCounter           // RDMA Read of the atomic counter
	numOps
)

// script is one round in order: the atomics run FetchAdd three times,
// then CmpSwap; the counter read back at the end follows everything before
// (RFC 5040 §5.5).
var script = []op{
	opWrite, opSend, opSendSE, opSendInv, opSendSEInv,
	opFetchAdd, opFetchAdd, opFetchAdd, opCmpSwap,
	opImmediate, opWriteImm, opReadCounter,
}

// endGrace bounds the wait for a stream to end once its client stopped: a
// hang is a failure of the termination state machine, reported, not
// waited on forever.
const endGrace = 30 * time.Second

// opError is an operation that failed (as opposed to one whose result did
// not verify): expected on a stream killed on purpose.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// clientStream is the active side of one stream.
type clientStream struct {
	r   *run
	p   *plan
	sid uint16
	st  *streams.Stream
	ep  *rdmap.Endpoint
	rng *rand.Rand
	res *StreamResult

	adv      advert
	sink     *rdmap.MR
	src      []byte
	pong     []byte
	msg      uint32 // the next message's number
	writes   uint32 // Writes so far: names their payloads
	counter  uint64 // the value the atomic counter holds
	consumed int    // server receive buffers used since the last sync
	invValid bool   // adv.invSTag has not been invalidated yet
	immDirty bool   // a Write with Immediate since the last sync

	killMu sync.Mutex
	how    string
}

// client opens stream id, runs it and waits for its end. If opening is
// set, the stream reports its Open done there and runs once every other
// stream of the group has too.
func (r *run) client(ctx context.Context, id uint16, opening *sync.WaitGroup) (res StreamResult) {
	p := r.newPlan(id)
	res = StreamResult{ID: id, Size: p.hi, Broken: p.broken}
	t0 := time.Now()
	defer func() { res.Elapsed = time.Since(t0) }()
	advBuf := make([]byte, advertLen)
	var priv []byte
	if r.cfg.Name != "" {
		priv = fmt.Appendf(nil, "%s stream %d", r.cfg.Name, id)
	}
	st, err := r.cm.Open(ctx, id, streams.OpenOptions{
		PrivateData: priv,
		Prepare: func(ep *rdmap.Endpoint) error {
			return ep.PostRecv(0, advBuf)
		},
	})
	if opening != nil {
		opening.Done()
	}
	if err != nil {
		res.Err = fmt.Errorf("open: %w", err)
		return res
	}
	r.opened.Add(1)
	if opening != nil {
		opening.Wait()
	}
	c := &clientStream{
		r: r, p: p, sid: id, st: st, ep: st.Endpoint, res: &res,
		rng: rand.New(rand.NewPCG(r.cfg.Seed, uint64(id))),
	}
	res.Err = c.run(ctx, advBuf)
	if res.Err != nil {
		_ = c.ep.Abort() // flushes everything, tells the peer
	}
	select {
	case <-st.Done():
	case <-time.After(endGrace):
		res.Err = errors.Join(res.Err, fmt.Errorf("stream did not end %v after its client stopped (kill %q, endpoint: %v)",
			endGrace, c.killedBy(), c.ep.Err()))
		_ = c.ep.Abort()
		<-st.Done()
	}
	res.Erroneous = st.Erroneous()
	res.Killed = c.killedBy()
	switch {
	case res.Err != nil, p.killed.Load():
	case p.broken && !res.Erroneous:
		res.Err = errors.New("broken stream not labelled erroneous (RFC 5040 §7)")
	case !p.broken && res.Erroneous:
		res.Err = fmt.Errorf("intact stream labelled erroneous: %v", st.Endpoint.Err())
	}
	return res
}

func (c *clientStream) run(ctx context.Context, advBuf []byte) error {
	comp, err := c.ep.Config().RecvCQ.Poll(ctx)
	if err != nil {
		return fmt.Errorf("advertisement: %w", err)
	}
	if comp.Err != nil {
		return fmt.Errorf("advertisement: %w", comp.Err)
	}
	if c.adv, err = parseAdvert(advBuf[:comp.Length]); err != nil {
		return err
	}
	if int(c.adv.max) != c.p.hi {
		return fmt.Errorf("advertised largest size %d, want %d", c.adv.max, c.p.hi)
	}
	c.invValid = true
	if c.p.broken {
		c.r.killed.Add(1)
		return c.breakStream(ctx)
	}
	c.sink, err = c.r.cpd.Register(make([]byte, c.p.hi+8), rdmap.LocalWrite, rdmap.MROption{Endpoint: c.ep})
	if err != nil {
		return err
	}
	defer c.sink.Deregister()
	c.src = make([]byte, c.p.hi)
	c.pong = make([]byte, pongLen)

	var kill *time.Timer
	if c.r.cfg.KillEvery > 0 {
		after := time.Duration(c.rng.ExpFloat64() * float64(c.r.cfg.KillEvery) * float64(c.r.cfg.Streams))
		kill = time.AfterFunc(after, c.kill)
		defer kill.Stop()
	}
	budget := -1
	if c.r.deadline.IsZero() {
		budget = c.r.cfg.Rounds * len(script)
	}
	for i := 0; budget < 0 || i < budget; i++ {
		if !c.r.deadline.IsZero() && !time.Now().Before(c.r.deadline) {
			break
		}
		if err := ctx.Err(); err != nil {
			return c.outcome(err)
		}
		o := script[i%len(script)]
		if c.r.cfg.Random {
			o = op(c.rng.IntN(int(numOps)))
		}
		if err := c.step(ctx, o); err != nil {
			return c.outcome(err)
		}
	}
	// A last sync: the server has verified everything and reads the
	// counter the client expects.
	if err := c.sync(ctx); err != nil {
		return c.outcome(err)
	}
	if kill != nil && !kill.Stop() {
		return nil // the kill is under way: it ends the stream
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := c.ep.Close(cctx); err != nil && !errors.Is(err, rdmap.ErrClosed) {
		return c.outcome(&opError{op: "close", err: err})
	}
	return nil
}

// outcome is nil for an operation that failed because the stream was
// killed on purpose.
func (c *clientStream) outcome(err error) error {
	var oe *opError
	if c.p.killed.Load() && (errors.As(err, &oe) || errors.Is(err, context.Canceled)) {
		return nil
	}
	return err
}

// do runs one operation and accounts for it.
func (c *clientStream) do(name string, octets int, f func() error) error {
	r := c.r
	r.posted.Add(1)
	err := f()
	r.completed.Add(1)
	if err != nil {
		r.flushed.Add(1)
		return &opError{op: name, err: err}
	}
	r.succeeded.Add(1)
	r.octets.Add(uint64(octets))
	r.mu.Lock()
	r.ops[name]++
	r.mu.Unlock()
	c.res.Ops++
	c.res.Octets += int64(octets)
	return nil
}

func isMessage(o op) bool {
	switch o {
	case opSend, opSendSE, opSendInv, opSendSEInv, opImmediate, opWriteImm:
		return true
	}
	return false
}

// message numbers the next message and counts the receive buffer it uses.
func (c *clientStream) message() uint32 {
	m := c.msg
	c.msg++
	c.consumed++
	return m
}

func (c *clientStream) step(ctx context.Context, o op) error {
	// Sync first if the operation needs a receive buffer the server may
	// not have posted again yet, an STag to invalidate, or the
	// write-with-immediate area the server may not have checked yet.
	if (isMessage(o) && c.consumed >= int(c.adv.window)-1) ||
		((o == opSendInv || o == opSendSEInv) && !c.invValid) ||
		(o == opWriteImm && c.immDirty) {
		if err := c.sync(ctx); err != nil {
			return err
		}
	}
	ep, stag, to := c.ep, c.adv.target.STag, c.adv.target.TO
	switch o {
	case opWrite:
		n := drawSize(c.rng, c.p.lo, c.p.hi)
		src := fill(c.src[:n], seed(c.sid, c.writes, n, kindWrite))
		c.writes++
		if err := c.do("write", n, func() error {
			_, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWrite, Local: src, RemoteSTag: stag, RemoteTO: to})
			return err
		}); err != nil {
			return err
		}
		if err := c.do("read", n, func() error {
			_, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: c.sink, Length: uint32(n), RemoteSTag: stag, RemoteTO: to})
			return err
		}); err != nil {
			return err
		}
		// RFC 5040 §5.5: the Read that follows the Write sees it.
		if i := mismatch(c.sink.Bytes()[:n], seed(c.sid, c.writes-1, n, kindWrite)); i >= 0 {
			return fmt.Errorf("read back after a write of %d octets differs from octet %d", n, i)
		}
	case opSend, opSendSE, opSendInv, opSendSEInv:
		n := drawSize(c.rng, c.p.lo, c.p.hi)
		kind, name := byte(kindSend), "send"
		switch o {
		case opSendSE:
			kind, name = kindSendSE, "send-se"
		case opSendInv:
			kind, name = kindSendInv, "send-inv"
		case opSendSEInv:
			kind, name = kindSendSEInv, "send-se-inv"
		}
		wr := rdmap.SendWR{Op: rdmap.WRSend, Solicited: o == opSendSE || o == opSendSEInv, Local: fill(c.src[:n], seed(c.sid, c.message(), n, kind))}
		if o == opSendInv || o == opSendSEInv {
			wr.Invalidate, wr.InvalidateSTag, c.invValid = true, c.adv.invSTag, false
		}
		return c.do(name, n, func() error { return postAndWait(ctx, ep, wr) })
	case opFetchAdd:
		add := 1 + c.rng.Uint64N(1<<20)
		var orig uint64
		err := c.do("fetch-add", 8, func() (err error) {
			var origC rdmap.Completion
			origC, err = ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRFetchAdd, RemoteSTag: stag, RemoteTO: to + c.adv.counterOff, Add: add}) // mask 0: one 64-bit field
			orig = origC.Orig
			return err
		})
		if err != nil {
			return err
		}
		if orig != c.counter {
			return fmt.Errorf("fetch-add returned %#x, want %#x (RFC 7306 §5.1)", orig, c.counter)
		}
		c.counter += add
	case opCmpSwap:
		swap := c.rng.Uint64()
		var orig uint64
		err := c.do("cmp-swap", 8, func() (err error) {
			var origC rdmap.Completion
			origC, err = ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRCmpSwap, RemoteSTag: stag, RemoteTO: to + c.adv.counterOff, Compare: c.counter, CompareMask: ^uint64(0), Swap: swap, SwapMask: ^uint64(0)})
			orig = origC.Orig
			return err
		})
		if err != nil {
			return err
		}
		if orig != c.counter {
			return fmt.Errorf("cmp-swap returned %#x, want %#x (RFC 7306 §5.1)", orig, c.counter)
		}
		c.counter = swap
	case opImmediate:
		se := c.rng.IntN(2) == 0
		msg := c.message()
		imm := immValue(kindImm, se, msg, immCheck(c.sid, msg))
		return c.do("immediate", 8, func() error {
			_, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRImmediate, Imm: imm, Solicited: se})
			return err
		})
	case opWriteImm:
		n := drawSize(c.rng, c.p.lo, c.p.hi)
		se := c.rng.IntN(2) == 0
		msg := c.message()
		src := fill(c.src[:n], seed(c.sid, msg, n, kindWriteImm))
		imm := immValue(kindWriteImm, se, msg, uint32(n))
		c.immDirty = true
		return c.do("write-imm", n+8, func() error {
			_, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWriteImm, Local: src, RemoteSTag: stag, RemoteTO: to + c.adv.immOff, Imm: imm, Solicited: se})
			return err
		})
	case opReadCounter:
		off := uint64(c.p.hi)
		if err := c.do("read-counter", 8, func() error {
			_, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: c.sink, SinkOffset: off, Length: 8, RemoteSTag: stag, RemoteTO: to + c.adv.counterOff})
			return err
		}); err != nil {
			return err
		}
		if v := binary.NativeEndian.Uint64(c.sink.Bytes()[off:]); v != c.counter {
			return fmt.Errorf("counter read back %#x, want %#x", v, c.counter)
		}
	}
	return nil
}

// sync sends a sync message and checks the server's answer: the number of
// messages it took and its reading of the atomic counter. Afterwards every
// receive buffer is posted again, the write-with-immediate area was
// checked and a valid STag to invalidate is known.
func (c *clientStream) sync(ctx context.Context) error {
	ep := c.ep
	if err := ep.PostRecv(1, c.pong); err != nil {
		return &opError{op: "sync", err: err}
	}
	msg := c.message()
	imm := immValue(kindSync, false, msg, immCheck(c.sid, msg))
	var comp rdmap.Completion
	err := c.do("sync", 8, func() error {
		if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRImmediate, Imm: imm}); err != nil {
			return err
		}
		var err error
		if comp, err = ep.Config().RecvCQ.Poll(ctx); err != nil {
			return err
		}
		return comp.Err
	})
	if err != nil {
		return err
	}
	pg, err := parsePong(c.pong[:comp.Length])
	if err != nil {
		return err
	}
	if pg.received != msg+1 {
		return fmt.Errorf("the server took %d messages, the client sent %d", pg.received, msg+1)
	}
	if pg.counter != c.counter {
		return fmt.Errorf("the server reads the atomic counter as %#x, want %#x", pg.counter, c.counter)
	}
	c.adv.invSTag, c.invValid = pg.invSTag, true
	c.consumed, c.immDirty = 0, false
	return nil
}

// postAndWait posts wr and waits for its completion on the send CQ.
func postAndWait(ctx context.Context, ep *rdmap.Endpoint, wr rdmap.SendWR) error {
	wr.ID = 7
	if _, err := ep.PostSend(wr); err != nil {
		return err
	}
	c, err := ep.Config().SendCQ.Poll(ctx)
	if err != nil {
		return err
	}
	if c.WRID != wr.ID {
		return fmt.Errorf("send completion %d, want %d", c.WRID, wr.ID)
	}
	return c.Err
}

// inject puts a tagged DDP segment for an STag the server never
// advertised on the wire, bypassing the local RDMAP checks: the
// advertised target's index with another key (RFC 5040 §8.1.1 item 4).
// It carries data: a zero-length Write needs no valid STag (it is one of
// the RTR forms of RFC 6581 §9.2).
func (c *clientStream) inject() ([]byte, error) {
	h := iwarpwire.DDPTaggedHeader{Last: true, RsvdULP: iwarpwire.RDMAPControlByte(iwarp.RDMAPOpWrite), STag: c.adv.target.STag ^ 0xFF}
	hb := h.Append(nil)
	return hb, c.st.Session.SendSegment(hb, []byte("not for you"))
}

// breakStream injects the hostile segment and checks the Terminate the
// server answers with: DDP layer, tagged buffer error, invalid STag
// (RFC 5041 §7.2), carrying the offending DDP header (RFC 5040 §4.8).
func (c *clientStream) breakStream(ctx context.Context) error {
	hb, err := c.inject()
	c.res.Injected = hb
	if err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	select {
	case <-c.ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	var te *rdmap.TerminateError
	if !errors.As(c.ep.Err(), &te) || !te.Remote {
		return fmt.Errorf("expected a Terminate from the peer, got %v", c.ep.Err())
	}
	c.res.Terminate = te
	if te.Code != iwarp.Term.DDPInvalidSTag {
		return fmt.Errorf("terminate %v, want %v (RFC 5041 §7.2)", te.Code, iwarp.Term.DDPInvalidSTag)
	}
	if string(te.DDPHeader) != string(hb) {
		return fmt.Errorf("terminate carries DDP header %x, want the injected %x (RFC 5040 §4.8)", te.DDPHeader, hb)
	}
	return nil
}

// kill terminates the stream on purpose: a local Abort (RFC 5040 §6.2.1)
// on even IDs, the hostile segment on odd ones.
func (c *clientStream) kill() {
	c.p.killed.Store(true)
	c.r.killed.Add(1)
	how := "abort"
	if c.sid%2 == 1 {
		how = "hostile segment"
	}
	c.killMu.Lock()
	c.how = how
	c.killMu.Unlock()
	if how == "abort" {
		_ = c.ep.Abort()
		return
	}
	if _, err := c.inject(); err != nil {
		_ = c.ep.Abort()
	}
}

func (c *clientStream) killedBy() string {
	c.killMu.Lock()
	defer c.killMu.Unlock()
	return c.how
}
