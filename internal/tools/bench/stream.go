package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// ctrlLen is the receive buffer size of control messages.
const ctrlLen = 128

// finBit marks the Immediate Data value that ends a run (docs/cli.md): the
// low 63 bits are the number of messages the active side sent.
const finBit = uint64(1) << 63

// Counters are updated while a run is in progress, for progress lines.
type Counters struct {
	Ops, Bytes atomic.Uint64
}

// conn is one side of the bench exchange on one endpoint.
type conn struct {
	ep   *rdmap.Endpoint
	pd   *rdmap.PD
	bufs [][]byte // receive buffers, WRID = index
	// kept holds receive completions a CQ handler took after its run
	// ended (pong.keepLocked), returned by recv before the CQ's; nil
	// until there are any (a pointer: a server holds a conn per idle
	// stream).
	kept   *[]rdmap.Completion
	mr     *rdmap.MR
	peer   peerBuffer
	setup  setupMsg
	ctr    *Counters
	inline int // largest payload posted inline (client side)
	// postList is Config.PostList (client side; 0 on the server:
	// automatic) and cqMod Config.CQMod (client side; 0 on the server:
	// every one), both at most MaxDepth (more counts as the depth), in
	// 16 bits each: a server holds a conn per idle stream.
	postList, cqMod int16
	// peak makes an active run record its operations' times for the
	// peak bandwidth (client side, Config.wantPeak).
	peak   bool
	onPing func(PingLine)
	test   string // the Setup's test once known (server side, guarded by Server.mu)
	// start and end bound an active run (client side, for aggregates),
	// from runEpoch (8 octets each where a time.Time takes 24: a server
	// holds a conn per idle stream); end is 0 until the run ended.
	start, end time.Duration
}

// runEpoch is the origin of conn.start and conn.end (monotonic).
var runEpoch = time.Now()

// span returns the bounds of the active run, zero times if none ended.
func (c *conn) span() (start, end time.Time) {
	if c.end == 0 {
		return time.Time{}, time.Time{}
	}
	return runEpoch.Add(c.start), runEpoch.Add(c.end)
}

func newConn(ep *rdmap.Endpoint) *conn { return &conn{ep: ep, pd: ep.PD()} }

// post posts one more receive buffer of n octets.
func (c *conn) post(n int) error {
	id := len(c.bufs)
	c.bufs = append(c.bufs, faultIn(make([]byte, n)))
	return c.ep.PostRecv(uint64(id), c.bufs[id])
}

func (c *conn) repost(id uint64) error {
	return c.ep.PostRecv(id, c.bufs[id])
}

// recv waits for the next receive completion.
func (c *conn) recv(ctx context.Context) (rdmap.Completion, error) {
	var comp rdmap.Completion
	if c.kept != nil && len(*c.kept) > 0 {
		comp, *c.kept = (*c.kept)[0], (*c.kept)[1:]
	} else {
		var err error
		if comp, err = c.ep.Config().RecvCQ.Poll(ctx); err != nil {
			return comp, c.cause(err)
		}
	}
	if comp.Err != nil {
		return comp, c.cause(comp.Err)
	}
	return comp, nil
}

// cause prefers the endpoint's reason for stopping over a flush.
func (c *conn) cause(err error) error {
	if errors.Is(err, rdmap.ErrFlushed) {
		// The stream's error, unless the completion's already says it.
		if e := c.ep.Err(); e != nil && !strings.Contains(err.Error(), e.Error()) {
			return fmt.Errorf("%w (stream: %w)", err, e)
		}
	}
	return err
}

// recvMsg waits for the next Send (not Immediate Data), reposting and
// skipping Immediate Data such as late credits.
func (c *conn) recvMsg(ctx context.Context) ([]byte, error) {
	for {
		comp, err := c.recv(ctx)
		if err != nil {
			return nil, err
		}
		if comp.HasImm {
			if err := c.repost(comp.WRID); err != nil {
				return nil, err
			}
			continue
		}
		return c.bufs[comp.WRID][:comp.Length], nil
	}
}

// unexpected is the error of a receive completion a run did not expect:
// the server's Report when the server ended the run early, else the
// operation and its length.
func (c *conn) unexpected(comp rdmap.Completion) error {
	if !comp.HasImm && comp.Length == reportLen {
		if r, _, err := parseReport(c.bufs[comp.WRID][:comp.Length]); err == nil && r.Status != statusOK {
			return r.Status.err()
		}
	}
	return fmt.Errorf("unexpected %v of %d octets during a %v test", comp.Op, comp.Length, c.setup.Test)
}

func (c *conn) sendMsg(ctx context.Context, m interface{ appendTo([]byte) []byte }) error {
	_, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: m.appendTo(make([]byte, 0, ctrlLen))})
	return err
}

// bufLen is the registered buffer length for a setup: Buffers buffers of
// the message size; ping needs a source and a sink half.
func bufLen(s setupMsg) int {
	n := max(int(s.Size), 8) * s.buffers()
	if s.Test == TestPing {
		n *= 2
	}
	return n
}

// recvLen is the length of the data receive buffers a side posts: the
// test's message size where they take the test's messages (the passive
// side of Send, Write with Immediate Data and ping, the client of a
// ping-pong), a control message's elsewhere (credits, the Fin, the
// Report): buffers of the message size that nothing fills would cost
// memory, and garbage collection during the measured phase.
func recvLen(s setupMsg, active bool) int {
	data := s.pongMode()
	if !active {
		data = s.Test == TestSend || s.Test == TestWriteImm || s.Test == TestPing
	}
	if !data {
		return ctrlLen
	}
	return max(int(s.Size), ctrlLen)
}

// recvCount is the number of data receive buffers a side posts.
func recvCount(s setupMsg, active bool) int {
	if active {
		return 8 // credits, pongs, the Report
	}
	if s.Test == TestSend || s.Test == TestWriteImm || s.Test == TestPing {
		return s.rxDepth() + 2
	}
	return 2 // the Fin and the Report-sized spare
}

// memoryCost is the buffer memory, in octets, prepareData allocates for s:
// the registered buffer and the data receive buffers.
func memoryCost(s setupMsg, active bool) int64 {
	n := min(recvCount(s, active), sinkSlots(s, active))
	cost := int64(bufLen(s)) + int64(n)*int64(recvLen(s, active))
	if active && s.peakable() {
		cost += 16 * int64(s.Iters) // the peak's post and completion times
	}
	return cost
}

// rxSink bounds the memory the receive buffers of a bandwidth Send or
// Write with Immediate Data span: the raw MPA baseline's reader buffer.
const rxSink = 1 << 20

// sinkSlots is how many distinct buffers the data receives of s share.
// The passive side of a bandwidth Send never reads the payloads it
// receives (it counts completions and returns credits; the Fin carries no
// payload and the Report follows it), so its rx-depth buffers, as many as
// 8 MiB of them by default, share a sink of at most rxSink octets, the
// buffer that the raw LLP baselines read into: a cold 8 MiB ring would
// measure the cache, not the protocol (ib_send_bw goes further: every
// receive larger than half a page lands in the same buffer). Every other
// role reads what it receives and keeps one buffer per receive.
func sinkSlots(s setupMsg, active bool) int {
	if active || !s.credited() {
		return math.MaxInt
	}
	return max(rxSink/recvLen(s, active), 2)
}

// prepareData registers the local buffer and posts the receives the role
// needs (docs/cli.md), before the Advert is sent.
func (c *conn) prepareData(active bool) error {
	s := c.setup
	mr, err := c.pd.Register(faultIn(make([]byte, bufLen(s))),
		rdmap.LocalWrite|rdmap.RemoteWrite|rdmap.RemoteRead|rdmap.RemoteAtomic, rdmap.MROption{Endpoint: c.ep})
	if err != nil {
		return err
	}
	c.mr = mr
	n, size := recvCount(s, active), recvLen(s, active)
	if slots := sinkSlots(s, active); slots < n {
		// The payloads of a bandwidth Send are never read: the buffers
		// share a sink of at most rxSink octets (see sinkSlots).
		sink := faultIn(make([]byte, slots*size))
		for i := range n {
			j, id := i%slots, len(c.bufs)
			c.bufs = append(c.bufs, sink[j*size:(j+1)*size:(j+1)*size])
			if err := c.ep.PostRecv(uint64(id), c.bufs[id]); err != nil {
				return err
			}
		}
		return nil
	}
	for range n {
		if err := c.post(size); err != nil {
			return err
		}
	}
	return nil
}

// faultIn touches every page of b and returns it. A test's buffers are
// made before its clock starts, but Go leaves a large new buffer's pages
// to be faulted in by their first write, which would then happen during
// the run, at the first octets placed in each (with an rx depth of 128 of
// 64 KiB, 2,048 page faults in a 64 MiB run). An RDMA device's
// registration pins its pages, faulting them in (ibv_reg_mr); the raw
// LLP baselines read into buffers already in use.
func faultIn(b []byte) []byte {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
	return b
}

func (c *conn) release() {
	if c.mr != nil {
		_ = c.mr.Deregister()
	}
}

// pongMode: latency variants of Send and Write-with-Immediate are
// ping-pongs; the reply completes the operation.
func (s setupMsg) pongMode() bool {
	return s.Latency() && (s.Test == TestSend || s.Test == TestWriteImm)
}

// credited: bandwidth Sends and Write-with-Immediates consume receive
// buffers at the passive side, which returns credits (RFC 5041 §7.1: an
// untagged message without a buffer is fatal, iWARP has no RNR retry).
func (s setupMsg) credited() bool {
	return !s.Latency() && (s.Test == TestSend || s.Test == TestWriteImm)
}

func (s setupMsg) depth() int {
	if s.Latency() {
		return 1
	}
	return int(s.Depth)
}

// rxDepth is the credit window of a credited test: the data receive
// buffers the passive side keeps posted (Setup.RxDepth, default Depth);
// depth() for the other tests.
func (s setupMsg) rxDepth() int {
	if !s.credited() || s.RxDepth == 0 {
		return s.depth()
	}
	return int(s.RxDepth)
}

func (s setupMsg) opBytes() uint64 {
	if s.Test.Atomic() {
		return 8
	}
	return uint64(s.Size)
}

// active runs the measuring side of a test and returns its Report.
func (c *conn) active(ctx context.Context) (Report, error) {
	s := c.setup
	if s.Test == TestPing {
		return c.pingActive(ctx)
	}
	if s.handled() {
		return c.activePong(ctx)
	}
	if s.handledBW() {
		return c.activeHandled(ctx)
	}
	d, window := s.depth(), uint64(s.rxDepth())
	t := c.newTally(d, s.Latency())
	var posted, credited uint64
	local := c.mr.Bytes()[:s.Size:s.Size]
	partial := t.report
	stopping := func() bool { return t.stoppingAt(posted) }
	sendCQ, recvCQ, epDone := c.ep.Config().SendCQ, c.ep.Config().RecvCQ, c.ep.Done()
	batch := make([]rdmap.SendWR, 0, d)
	every := c.postEvery()
	var one [1]rdmap.Completion
	wake := make(chan struct{}, 1)
	notify := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for {
		progress := false
		// The operations that may go now are posted together
		// (Endpoint.PostSend of a list), as perftest posts a list of work requests.
		batch = batch[:0]
		ops := posted
		for ; t.listReady(posted, every) && ops-t.done < uint64(d) && !t.stoppingAt(ops) && (!s.credited() || ops-credited < window); ops++ {
			batch = c.appendOps(batch, ops, local)
		}
		c.signal(t, batch)
		if ops > posted {
			// Stamped before the post: an inline post may not return
			// before the answer is on its way back.
			t.stamp(posted, ops)
			if _, err := c.ep.PostSend(batch...); err != nil {
				return partial(), err
			}
			posted = ops
			progress = true
		}
		if t.done == posted && stopping() {
			break
		}
		for {
			if sendCQ.PollN(one[:]) == 0 {
				break
			}
			comp := one[0]
			progress = true
			if comp.Err != nil {
				return partial(), c.cause(fmt.Errorf("%v: %w", comp.Op, comp.Err))
			}
			if comp.WRID&1 == 1 && !s.pongMode() {
				if err := t.completeThrough(comp.WRID>>1, comp.Orig, time.Now()); err != nil {
					return partial(), err
				}
			}
		}
		for {
			if recvCQ.PollN(one[:]) == 0 {
				break
			}
			comp := one[0]
			progress = true
			if comp.Err != nil {
				return partial(), c.cause(comp.Err)
			}
			switch {
			case s.credited() && comp.HasImm:
				credited = max(credited, comp.Imm)
			case s.pongMode():
				seq := t.done
				if comp.HasImm {
					seq = comp.Imm
				}
				if err := t.complete(seq, seq, time.Now()); err != nil {
					return partial(), err
				}
			default:
				return partial(), c.unexpected(comp)
			}
			if err := c.repost(comp.WRID); err != nil {
				return partial(), err
			}
		}
		if !progress {
			// Woken by the next completion of either CQ (a handler is
			// called at once for one already there).
			sendCQ.SetHandler(notify)
			recvCQ.SetHandler(notify)
			select {
			case <-wake:
			case <-ctx.Done():
				return partial(), ctx.Err()
			case <-epDone:
				return partial(), c.cause(fmt.Errorf("%w", rdmap.ErrFlushed))
			}
			sendCQ.SetHandler(nil)
			recvCQ.SetHandler(nil)
		}
	}
	if s.Test == TestWrite && !s.Latency() {
		// A zero-length Read completes only after every earlier Write was
		// placed at the peer (RFC 5040 §5.5 rule 12 ordering): the clock
		// stops when the data is there, not when it was queued.
		if _, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, RemoteSTag: c.peer.STag}); err != nil {
			return partial(), c.cause(fmt.Errorf("write fence: %w", err))
		}
	}
	r := t.report()
	if err := c.sendFin(ctx, posted); err != nil {
		return partial(), err
	}
	return r, nil
}

// sendFin tells the passive side that the run ended after n operations
// (Immediate Data with finBit, waited for).
func (c *conn) sendFin(ctx context.Context, n uint64) error {
	if _, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRImmediate, Imm: finBit | n}); err != nil {
		return c.cause(fmt.Errorf("fin: %w", err))
	}
	return nil
}

// tally is the progress of an active run: operations complete in order,
// each timed from its post, until Iters or Duration.
type tally struct {
	c        *conn
	start    time.Time
	postedAt []time.Time // by operation number modulo the depth
	// quiet marks the operations posted without a completion asked for
	// (Config.CQMod), by operation number modulo the depth; nil while
	// every operation asks for one.
	quiet []bool
	lat   *latRecorder
	done  uint64
	// times are the operations' post and completion times when the run
	// measures its peak (conn.peak), else nil.
	times *peakTimes
}

func (c *conn) newTally(depth int, precise bool) *tally {
	t := &tally{c: c, start: time.Now(), postedAt: make([]time.Time, depth), lat: newLatRecorder(precise)}
	if c.peak && !precise && c.setup.Iters > 0 {
		t.times = newPeakTimes(c.setup.Iters)
	}
	return t
}

// listReady reports whether the next list of operations may be posted
// with posted operations posted so far: every slots of the depth are free
// (Config.PostList), or fewer are and the run ends before filling them.
func (t *tally) listReady(posted, every uint64) bool {
	free := uint64(len(t.postedAt)) - (posted - t.done)
	return free >= every || t.stoppingAt(posted+free)
}

// postEvery is the length of the lists a bandwidth run posts
// (Config.PostList): automatic (0) is a quarter of the depth for the runs
// that take completions in a CQ handler, 1 for the others; at most the
// depth.
func (c *conn) postEvery() uint64 {
	s := c.setup
	d := s.depth()
	n := int(c.postList)
	if n == 0 {
		n = 1
		if s.handledBW() {
			n = d / 4
		}
	}
	return uint64(min(max(n, 1), d))
}

// cqModulus is the effective Config.CQMod of this conn's bandwidth run: 1
// (every operation signalled) in latency mode, for ping-pongs and on the
// server; at most the depth less the post list plus one. A run waits for
// a completion when fewer than a list's worth of its depth are free, with
// at least depth-list+1 operations outstanding from just after a
// signalled one: a modulus up to that many puts a signalled operation
// among them (a larger one could leave none, and the run would wait for
// ever).
func (c *conn) cqModulus() uint64 {
	s := c.setup
	if c.cqMod <= 1 || s.Latency() || s.pongMode() || s.Test == TestPing {
		return 1
	}
	d, every := uint64(s.depth()), c.postEvery()
	return min(uint64(c.cqMod), d-every+1)
}

// signal marks the work requests of a list about to be posted that need
// no completion (Config.CQMod): all but every cqModulus-th operation and
// the run's last; with a Duration, whose last is not known in advance,
// the list's last is signalled too. A Write in latency mode (two work
// requests per operation) never gets here with a modulus above 1.
func (c *conn) signal(t *tally, batch []rdmap.SendWR) {
	m := c.cqModulus()
	if m == 1 {
		return
	}
	if t.quiet == nil {
		t.quiet = make([]bool, len(t.postedAt))
	}
	s := c.setup
	for i := range batch {
		seq := batch[i].ID >> 1
		last := s.Iters > 0 && seq+1 == s.Iters || s.Iters == 0 && i == len(batch)-1
		batch[i].Unsignaled = (seq+1)%m != 0 && !last
		t.quiet[seq%uint64(len(t.quiet))] = batch[i].Unsignaled
	}
}

// stoppingAt reports whether the run ends before operation n.
func (t *tally) stoppingAt(n uint64) bool {
	if t.c.setup.Iters > 0 {
		return n >= t.c.setup.Iters // no clock reading
	}
	return t.stoppingAtTime(n, time.Now())
}

// stoppingAtTime is stoppingAt with the clock read at now.
func (t *tally) stoppingAtTime(n uint64, now time.Time) bool {
	s := t.c.setup
	if s.Iters > 0 {
		return n >= s.Iters
	}
	return now.Sub(t.start) >= s.Duration
}

// stamp records the post of operations [from, to), stamped before the
// post: an inline post may not return before the answer is on its way
// back.
func (t *tally) stamp(from, to uint64) { t.stampAt(from, to, time.Now()) }

// stampAt is stamp with the clock read at now.
func (t *tally) stampAt(from, to uint64, now time.Time) {
	for n := from; n < to; n++ {
		t.postedAt[n%uint64(len(t.postedAt))] = now
	}
	if t.times != nil {
		at := since(now)
		for n := from; n < to && n < uint64(len(t.times.posted)); n++ {
			t.times.posted[n] = at
		}
	}
}

// completeThrough records operations t.done to seq done at now: seq's
// completion completes the unsignalled ones posted before it
// (Config.CQMod; RFC 5040 §5.5: a send queue's completions come in the
// order its work requests were posted). orig is seq's atomic original
// value; the unsignalled ones return none to check.
func (t *tally) completeThrough(seq, orig uint64, now time.Time) error {
	if seq > t.done && seq-t.done < uint64(len(t.postedAt)) && t.quiet != nil {
		for k := t.done; k < seq; k++ {
			if !t.quiet[k%uint64(len(t.quiet))] {
				// Operation k asked for a completion of its own.
				return fmt.Errorf("completion of operation %d, expected %d (RFC 5040 §5.5 rule 15)", seq, k)
			}
		}
		for t.done < seq {
			t.record(now)
		}
	}
	return t.complete(seq, orig, now) // checks seq == t.done
}

// record counts operation t.done done at now, unchecked.
func (t *tally) record(now time.Time) {
	t.lat.record(now.Sub(t.postedAt[t.done%uint64(len(t.postedAt))]))
	if t.times != nil && t.done < uint64(len(t.times.done)) {
		t.times.done[t.done] = since(now)
	}
	t.done++
	if ctr := t.c.ctr; ctr != nil {
		ctr.Ops.Add(1)
		ctr.Bytes.Add(t.c.setup.opBytes())
	}
}

// complete records operation seq (orig: an atomic's original value) done
// at now.
func (t *tally) complete(seq, orig uint64, now time.Time) error {
	s := t.c.setup
	if seq != t.done {
		return fmt.Errorf("completion of operation %d, expected %d (RFC 5040 §5.5 rule 15)", seq, t.done)
	}
	if want := seq / uint64(s.buffers()); s.Test.Atomic() && orig != want {
		// Atomics execute in order at the responder (RFC 7306 §5.2.2
		// rule 8): operation k sees its buffer's counter at k, or, with
		// n buffers taken in turn, at k/n.
		return fmt.Errorf("%v %d returned %d, want %d", s.Test, seq, orig, want)
	}
	t.record(now)
	return nil
}

// report is what was measured so far (the whole run once it ended; a
// partial Report beside the error of a run that ended early). Its Lat is
// left to Report.settle: summarising a histogram walks it several times,
// and a stream that finishes first would do that on the processors the
// others are still measuring on (256 streams: about 5% of the client's
// CPU during the run).
func (t *tally) report() Report {
	n := t.done
	return Report{Ops: n, Bytes: n * t.c.setup.opBytes(), Elapsed: time.Since(t.start), hist: t.lat, times: t.times}
}

// appendOps appends the work requests of operation seq (two for a Write
// in latency mode: the Write and the zero-length Read behind it); the one
// that completes it carries WRID seq<<1|1.
func (c *conn) appendOps(b []rdmap.SendWR, seq uint64, local []byte) []rdmap.SendWR {
	s := c.setup
	last := seq<<1 | 1
	if s.pongMode() {
		last = seq << 1
	}
	rs := c.peer.STag
	var to uint64 // the offset of the operation's buffer (Setup.Buffers)
	if n := uint64(s.buffers()); n > 1 {
		to = seq % n * uint64(s.Size)
		local = c.mr.Bytes()[to : to+uint64(s.Size) : to+uint64(s.Size)]
	}
	var wr rdmap.SendWR
	switch s.Test {
	case TestWrite:
		wr = rdmap.SendWR{ID: last, Op: rdmap.WRWrite, Local: local, RemoteSTag: rs, RemoteTO: to}
		if s.Latency() {
			// Write latency: the Write and a zero-length Read behind it,
			// which the peer answers only after placing the Write.
			wr.ID = seq << 1
			b = append(b, wr)
			wr = rdmap.SendWR{ID: last, Op: rdmap.WRRead, RemoteSTag: rs, RemoteTO: to}
		}
	case TestRead:
		wr = rdmap.SendWR{ID: last, Op: rdmap.WRRead, Sink: c.mr, SinkOffset: to, Length: s.Size, RemoteSTag: rs, RemoteTO: to}
	case TestSend:
		wr = rdmap.SendWR{ID: last, Op: rdmap.WRSend, Local: local}
	case TestFetchAdd:
		wr = rdmap.SendWR{ID: last, Op: rdmap.WRFetchAdd, RemoteSTag: rs, RemoteTO: to, Add: 1}
	case TestCmpSwap:
		k := seq / uint64(s.buffers()) // the buffer's counter (tally.complete)
		wr = rdmap.SendWR{ID: last, Op: rdmap.WRCmpSwap, RemoteSTag: rs, RemoteTO: to,
			Compare: k, CompareMask: ^uint64(0), Swap: k + 1, SwapMask: ^uint64(0)}
	case TestWriteImm:
		wr = rdmap.SendWR{ID: last, Op: rdmap.WRWriteImm, Local: local, RemoteSTag: rs, RemoteTO: to, Imm: seq}
	}
	if wr.Op == rdmap.WRSend || wr.Op == rdmap.WRWrite || wr.Op == rdmap.WRWriteImm {
		wr.Inline = len(wr.Local) <= c.inline
	}
	return append(b, wr)
}

// passive serves the peer's operations until its Fin and returns what it
// saw. Receive buffers are reposted before credits are returned.
func (c *conn) passive(ctx context.Context) (Report, error) {
	s := c.setup
	if s.handled() {
		return c.passivePong(ctx)
	}
	if s.credited() && !s.Events() {
		return c.passiveCredited(ctx)
	}
	// A credit per half window: more often costs a message and a wake-up
	// each, less often leaves the active side waiting
	// (docs/benchmarks-notes.md).
	every := uint64(max(s.rxDepth()/2, 1))
	var recvd, bytes, since uint64
	start := time.Now()
	for {
		comp, err := c.recv(ctx)
		if err != nil {
			return Report{Ops: recvd, Bytes: bytes, Elapsed: time.Since(start)}, err
		}
		if comp.HasImm && comp.Imm&finBit != 0 {
			n := comp.Imm &^ finBit
			r := Report{Ops: n, Bytes: n * s.opBytes(), Elapsed: time.Since(start)}
			if (s.Test == TestSend || s.Test == TestWriteImm || s.Test == TestPing) && n != recvd {
				r.Status = statusVerifyError
				return r, fmt.Errorf("peer sent %d messages, %d arrived", n, recvd)
			}
			return r, nil
		}
		if err := c.repost(comp.WRID); err != nil {
			return Report{Ops: recvd, Bytes: bytes, Elapsed: time.Since(start)}, err
		}
		recvd++
		bytes += s.opBytes()
		if c.ctr != nil {
			c.ctr.Ops.Add(1)
			c.ctr.Bytes.Add(s.opBytes())
		}
		switch {
		case s.Test == TestPing:
			if err := c.pingReply(ctx, comp); err != nil {
				return Report{Status: statusVerifyError}, err
			}
		case s.pongMode() && s.Test == TestSend:
			if _, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: c.mr.Bytes()[:s.Size]}); err != nil {
				return Report{Ops: recvd, Bytes: bytes, Elapsed: time.Since(start)}, c.cause(err)
			}
		case s.pongMode():
			if _, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRWriteImm, Local: c.mr.Bytes()[:s.Size], RemoteSTag: c.peer.STag, Imm: comp.Imm}); err != nil {
				return Report{Ops: recvd, Bytes: bytes, Elapsed: time.Since(start)}, c.cause(err)
			}
		case s.credited():
			if since++; since >= every {
				since = 0
				if _, err := c.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRImmediate, Imm: recvd}); err != nil {
					return Report{Ops: recvd, Bytes: bytes, Elapsed: time.Since(start)}, c.cause(err)
				}
			}
		default:
			return Report{Ops: recvd, Bytes: bytes, Elapsed: time.Since(start)}, c.unexpected(comp)
		}
	}
}
