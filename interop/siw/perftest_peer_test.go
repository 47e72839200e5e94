package siw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// This file implements the peer side of perftest's bandwidth tests
// (ib_write_bw, ib_read_bw, ib_send_bw) with -R, as Debian bookworm's
// perftest 4.5-0.17 speaks it over iWARP (read from its source and checked
// against captures of siw ↔ siw runs, docs/siw-interop.md):
//
//  1. The client opens an rdma_cm connection to the server's port: the
//     "comm" QP (MPA enhanced, IRD = ORD = 0, no private data besides the
//     IRD/ORD word). Every control message is one Send on it; the client
//     sends first and the server answers each (ctx_xchg_data /
//     ctx_hand_shake), so at most one message is in flight per direction,
//     matching the single 56-octet receive perftest keeps posted.
//  2. version (16), cycle_buffer (4), cache_line_size (4), MTU (2), then a
//     handshake of zeroed pingpong_dests (56).
//  3. The server listens again on the same port (the comm listener is gone
//     by then: a client may see a refusal and retries) and the client opens
//     the data connection (IRD = ORD = out_reads for ib_read_bw, else 0).
//  4. Handshakes of pingpong_dest: a zeroed one, then the real ones (rkey
//     and vaddr of the data buffer, or of the Send credit word), three of
//     them for Write/Read, four for Send.
//  5. The traffic on the data connection: RDMA Writes to, or Reads of, the
//     server's advertised buffer; or Sends into the server's posted
//     receives, with the server RDMA-Writing a count of completed receives
//     into the client's credit word (iWARP has no RNR retry).
//  6. Write/Read: one handshake, then the five report fields
//     (xchg_bw_reports: the client's figures; the server's are
//     uninitialised). Send: nothing.
//  7. A closing handshake (ctx_close_connection); both sides disconnect.

// Verb selects the perftest bandwidth test.
type Verb uint8

// The perftest bandwidth tests.
const (
	VerbWrite Verb = iota + 1 // ib_write_bw
	VerbRead                  // ib_read_bw
	VerbSend                  // ib_send_bw
)

func (v Verb) String() string {
	switch v {
	case VerbWrite:
		return "write"
	case VerbRead:
		return "read"
	case VerbSend:
		return "send"
	}
	return fmt.Sprintf("Verb(%d)", uint8(v))
}

// Tool is the perftest program of v.
func (v Verb) Tool() string { return "ib_" + v.String() + "_bw" }

// preTrafficHandshakes is the number of pingpong_dest handshakes after the
// one that carries the real values and before the traffic starts.
func (v Verb) preTrafficHandshakes() int {
	if v == VerbSend {
		return 3 // after connecting, printing, posting the receives
	}
	return 2 // after connecting, printing
}

// PerftestConfig configures our side of a perftest run. Size and Iters must
// equal the peer's -s and -n: perftest does not exchange them.
type PerftestConfig struct {
	Verb Verb
	// Size is the message size (-s); 0 means 65536 (perftest's default).
	Size int
	// Iters is the number of messages (-n); 0 means 1000.
	Iters int
	// MPA is the base MPA configuration of both connections (Enhanced is
	// forced on, IRD and ORD are set per connection as perftest does).
	MPA mpa.Config
	// OutReads is the IRD and ORD of an ib_read_bw data connection and the
	// out_reads advertised; 0 means 128 (siw's maximum, what perftest uses).
	OutReads int
	// TxDepth bounds the work requests outstanding on the send queue; 0
	// means 128 (perftest's default tx depth).
	TxDepth int
	// CQMod is perftest's cq_mod (-Q) on the client: only every CQMod-th
	// work request, and the last, asks for a completion (the others are
	// rdmap.SendWR.Unsignaled), and a completion completes the unsignaled
	// ones before it. 0 means 100 (perftest's DEF_CQ_MOD for its bandwidth
	// tests); at most TxDepth, as perftest clamps it; 1 signals every one.
	CQMod int
	// RxDepth is the ib_send_bw server's receive depth: the client never has
	// more than RxDepth Sends beyond the last credit; the server posts
	// RxDepth + 8 receives. 0 means min(Iters, 512), perftest's default.
	RxDepth int
	// CycleBuffer and CacheLine are advertised in the sys-data exchange;
	// 0 means 4096 and 64. The larger cycle buffer of both ends sizes the
	// data buffers, as in perftest.
	CycleBuffer, CacheLine int
	// StepTimeout bounds each control exchange and the data connection set
	// up; TrafficTimeout the traffic phase. 0: 30 s and 120 s.
	StepTimeout, TrafficTimeout time.Duration
	// Base is the Tagged Offset of our buffers (0: a page-aligned address
	// like a user virtual address).
	Base uint64
}

func (c *PerftestConfig) defaults() error {
	if c.Verb < VerbWrite || c.Verb > VerbSend {
		return fmt.Errorf("siw: perftest verb %v", c.Verb)
	}
	if c.Size <= 0 {
		c.Size = 65536
	}
	if c.Iters <= 0 {
		c.Iters = 1000
	}
	if c.OutReads <= 0 {
		c.OutReads = 128
	}
	if c.TxDepth <= 0 {
		c.TxDepth = 128
	}
	c.TxDepth = min(c.TxDepth, c.Iters)
	if c.CQMod <= 0 {
		c.CQMod = 100
	}
	c.CQMod = min(c.CQMod, c.TxDepth)
	if c.RxDepth <= 0 {
		c.RxDepth = min(c.Iters, 512)
	}
	if c.CycleBuffer <= 0 {
		c.CycleBuffer = 4096
	}
	if c.CacheLine <= 0 {
		c.CacheLine = 64
	}
	if c.StepTimeout <= 0 {
		c.StepTimeout = 30 * time.Second
	}
	if c.TrafficTimeout <= 0 {
		c.TrafficTimeout = 120 * time.Second
	}
	if c.Base == 0 {
		c.Base = 0x55d0_0000_0000
	}
	return nil
}

// PerftestResult reports our side of one run.
type PerftestResult struct {
	Verb Verb
	// Iters and Bytes count the messages moved (and, where perftest lets
	// us, verified); Elapsed is our traffic phase: from the first work
	// request to the last completion on a client, from the last
	// pre-traffic handshake to the end of the traffic on a server.
	Iters   int
	Bytes   int64
	Elapsed time.Duration
	// BWAvg (MB/sec, MB = 2^20 octets, perftest's unit) and MsgRate (Mpps)
	// are our figures over Elapsed, as perftest computes its averages;
	// BWPeak is Size over the shortest time from posting one work request
	// to its completion. They are what we report to a perftest server.
	BWAvg, BWPeak, MsgRate float64
	// Verified counts the messages or buffers whose data was checked.
	Verified int
	// Completions counts the send completions the client took (fewer
	// than Iters with PerftestConfig.CQMod above 1).
	Completions int
	// PeerVersion, PeerDest and PeerReport are what the peer sent
	// (PeerReport: Write/Read only; meaningful from a perftest client).
	PeerVersion string
	PeerDest    Dest
	PeerReport  *Report
	// Dest is the pingpong_dest we advertised.
	Dest Dest
	// Credits is the number of Send credits written (server) or the last
	// credit read (client).
	Credits int
	// Ctrl and Data are the negotiated MPA parameters of both connections.
	Ctrl, Data mpa.Params
}

// ErrPerftestData: data a perftest run moved is not what it must be.
var ErrPerftestData = errors.New("siw: perftest data check failed")

const mib = 1 << 20

func (r *PerftestResult) finish(size int, minOp time.Duration) {
	if r.Elapsed > 0 {
		r.BWAvg = float64(r.Bytes) / r.Elapsed.Seconds() / mib
		r.MsgRate = float64(r.Iters) / r.Elapsed.Seconds() / 1e6
	}
	if minOp > 0 {
		r.BWPeak = float64(size) / minOp.Seconds() / mib
	}
}

// endpoint is one connection's RDMAP endpoint with a watchdog that aborts
// it when the run's context ends.
type endpoint struct {
	ep   *rdmap.Endpoint
	pd   *rdmap.PD
	stop chan struct{}
	once sync.Once
}

func newEndpoint(ctx context.Context, c *mpa.Conn, pd *rdmap.PD, cfg rdmap.EndpointConfig) (*endpoint, error) {
	ep, err := pd.NewEndpoint(c, cfg)
	if err != nil {
		_ = c.Abort()
		return nil, err
	}
	e := &endpoint{ep: ep, pd: pd, stop: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
			_ = ep.Abort()
		case <-e.stop:
		case <-ep.Done():
		}
	}()
	return e, nil
}

// abort tears the endpoint down and waits for it.
func (e *endpoint) abort() {
	if e == nil {
		return
	}
	_ = e.ep.Abort()
	<-e.ep.Done()
	e.once.Do(func() { close(e.stop) })
}

// close closes the endpoint gracefully (bounded by d); a peer that closed
// first is not an error.
func (e *endpoint) close(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err := e.ep.Close(ctx)
	<-e.ep.Done()
	e.once.Do(func() { close(e.stop) })
	if err != nil && !errors.Is(err, rdmap.ErrPeerClosed) && !errors.Is(err, rdmap.ErrClosed) {
		return err
	}
	return nil
}

// epErr explains a failed completion with the endpoint's own error (a
// Terminate from the peer, the peer closing, ...).
func epErr(e *rdmap.Endpoint, err error) error {
	if why := e.Err(); why != nil && !errors.Is(err, why) {
		return fmt.Errorf("%w (endpoint: %v)", err, why)
	}
	return err
}

// ctrl is the comm connection: Send/Recv of one message at a time.
type ctrl struct {
	*endpoint
	client  bool
	bufs    [2][]byte
	timeout time.Duration
	n       int // messages exchanged
}

func newCtrl(ctx context.Context, c *mpa.Conn, client bool, timeout time.Duration) (*ctrl, error) {
	pd := new(rdmap.Device).AllocPD()
	e, err := newEndpoint(ctx, c, pd, EndpointConfig(c.Params()))
	if err != nil {
		return nil, err
	}
	s := &ctrl{endpoint: e, client: client, timeout: timeout}
	for i := range s.bufs {
		s.bufs[i] = make([]byte, CtrlMaxLen)
		if err := e.ep.PostRecv(uint64(i), s.bufs[i]); err != nil {
			e.abort()
			return nil, err
		}
	}
	if err := e.ep.Start(); err != nil {
		e.abort()
		return nil, err
	}
	return s, nil
}

func (s *ctrl) recv(ctx context.Context) ([]byte, error) {
	c, err := s.ep.Config().RecvCQ.Poll(ctx)
	if err != nil {
		return nil, epErr(s.ep, err)
	}
	if c.Err != nil {
		return nil, epErr(s.ep, c.Err)
	}
	msg := bytes.Clone(s.bufs[c.WRID][:c.Length])
	// The peer may disconnect right after its last message (the closing
	// handshake): then the repost fails, and a later recv reports why.
	if err := s.ep.PostRecv(c.WRID, s.bufs[c.WRID]); err != nil &&
		!errors.Is(err, rdmap.ErrClosed) && !errors.Is(err, rdmap.ErrPeerClosed) {
		return nil, err
	}
	return msg, nil
}

// xchg is ctx_xchg_data: the client sends msg then receives the peer's,
// the server receives then sends. want is the expected length of the
// peer's message.
func (s *ctrl) xchg(ctx context.Context, what string, msg []byte, want int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	s.n++
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("siw: perftest control message %d (%s): %w", s.n, what, err)
	}
	if s.client {
		if _, err := s.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: msg}); err != nil {
			return fail(epErr(s.ep, err))
		}
	}
	got, err := s.recv(ctx)
	if err != nil {
		return fail(err)
	}
	if len(got) != want {
		return fail(fmt.Errorf("%w: %d octets, want %d", ErrPerftestMsg, len(got), want))
	}
	if !s.client {
		if _, err := s.ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: msg}); err != nil {
			return fail(epErr(s.ep, err))
		}
	}
	return got, nil
}

// preamble exchanges version, sys data and MTU (exchange_versions,
// check_sys_data, check_mtu) and returns the cycle buffer both ends use.
func (s *ctrl) preamble(ctx context.Context, cfg *PerftestConfig, res *PerftestResult) (int, error) {
	b, err := s.xchg(ctx, "version", AppendVersion(nil, PerftestVersion), VersionLen)
	if err != nil {
		return 0, err
	}
	ver, v, err := ParseVersion(b)
	if err != nil {
		return 0, err
	}
	res.PeerVersion = ver
	if v < minPeerVersion {
		return 0, fmt.Errorf("%w: peer perftest version %q is older than %v, whose message formats this implements", ErrPerftestMsg, ver, minPeerVersion)
	}
	b, err = s.xchg(ctx, "cycle_buffer", AppendInt(nil, int32(cfg.CycleBuffer)), IntLen)
	if err != nil {
		return 0, err
	}
	cycle, _ := ParseInt(b)
	if _, err := s.xchg(ctx, "cache_line_size", AppendInt(nil, int32(cfg.CacheLine)), IntLen); err != nil {
		return 0, err
	}
	// IBV_MTU_1024, what siw reports (the MTU means nothing to iWARP).
	if _, err := s.xchg(ctx, "mtu", AppendMTU(nil, 3), MTULen); err != nil {
		return 0, err
	}
	return max(int(cycle), cfg.CycleBuffer), nil
}

// handshake is ctx_hand_shake: an exchange of pingpong_dests.
func (s *ctrl) handshake(ctx context.Context, what string, my Dest) (Dest, error) {
	b, err := s.xchg(ctx, what, my.Append(nil), DestLen)
	if err != nil {
		return Dest{}, err
	}
	d, _, err := ParseDest(b)
	return d, err
}

// dataBuffers are our side's registered memory for one run.
type dataBuffers struct {
	adv     *rdmap.MR // advertised in our pingpong_dest
	sink    *rdmap.MR // client Read sinks (slots of Size octets)
	src     []byte    // client Write/Send source
	recvs   [][]byte  // server Send receive buffers
	pattern []byte    // server Write target fill
}

// dataConfig is the MPA configuration of the data connection.
func dataConfig(cfg *PerftestConfig) *mpa.Config {
	c := cfg.MPA
	c.Enhanced = true
	c.IRD, c.ORD = 0, 0
	if cfg.Verb == VerbRead {
		c.IRD, c.ORD = uint16(cfg.OutReads), uint16(cfg.OutReads)
	}
	return &c
}

func ctrlConfig(cfg *PerftestConfig) *mpa.Config {
	c := cfg.MPA
	c.Enhanced = true
	c.IRD, c.ORD = 0, 0
	return &c
}

// fill writes a pattern no perftest buffer (rand() octets) reproduces.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
}

// setupData creates the data endpoint and registers our buffers.
func setupData(ctx context.Context, c *mpa.Conn, cfg *PerftestConfig, client bool, cycle int) (*endpoint, *dataBuffers, error) {
	pd := new(rdmap.Device).AllocPD()
	ecfg := EndpointConfig(c.Params())
	buffSize := max(cfg.Size, cycle) // perftest's BUFF_SIZE
	nrecv := 0
	if cfg.Verb == VerbSend && !client {
		nrecv = cfg.RxDepth + 8
		ecfg.RQDepth = nrecv
	}
	ecfg.SQDepth = max(256, 2*cfg.TxDepth)
	e, err := newEndpoint(ctx, c, pd, ecfg)
	if err != nil {
		return nil, nil, err
	}
	b := &dataBuffers{}
	reg := func(n int, acc rdmap.Access, to uint64) (*rdmap.MR, error) {
		return pd.Register(make([]byte, n), acc, rdmap.MROption{BaseTO: to}, rdmap.MROption{Endpoint: e.ep})
	}
	err = func() error {
		var err error
		switch {
		case cfg.Verb == VerbSend:
			// ctx_alloc_credit: the pingpong_dest advertises the credit
			// word, which only the server writes.
			if b.adv, err = reg(CreditLen, rdmap.LocalWrite|rdmap.RemoteWrite, cfg.Base+8); err != nil {
				return err
			}
			if client {
				b.src = make([]byte, cfg.Size)
				fill(b.src, 0x5a)
				return nil
			}
			b.recvs = make([][]byte, nrecv)
			for i := range b.recvs {
				b.recvs[i] = make([]byte, cfg.Size)
				if err := e.ep.PostRecv(uint64(i), b.recvs[i]); err != nil {
					return err
				}
			}
		case cfg.Verb == VerbWrite:
			if b.adv, err = reg(buffSize, rdmap.LocalWrite|rdmap.RemoteWrite, cfg.Base); err != nil {
				return err
			}
			if client {
				b.src = make([]byte, cfg.Size)
				fill(b.src, 0x5a)
				return nil
			}
			fill(b.adv.Bytes(), 0xa5)
			b.pattern = bytes.Clone(b.adv.Bytes())
		case cfg.Verb == VerbRead && client:
			slots := max(1, min(cfg.TxDepth, cfg.OutReads, cfg.Iters))
			if b.sink, err = reg(slots*cfg.Size, rdmap.LocalWrite|rdmap.RemoteWrite, cfg.Base); err != nil {
				return err
			}
			b.adv = b.sink
		case cfg.Verb == VerbRead:
			if b.adv, err = reg(buffSize, rdmap.RemoteRead, cfg.Base); err != nil {
				return err
			}
			fill(b.adv.Bytes(), 0xa5)
		}
		return nil
	}()
	if err == nil {
		err = e.ep.Start()
	}
	if err != nil {
		e.abort()
		return nil, nil, err
	}
	return e, b, nil
}

// myDest is our pingpong_dest.
func myDest(cfg *PerftestConfig, b *dataBuffers) Dest {
	d := Dest{OutReads: 1, QPN: 0x100 + uint32(cfg.Verb), PSN: rand.Uint32() & 0xffffff,
		RKey: b.adv.STag(), VAddr: b.adv.BaseTO()}
	if cfg.Verb == VerbRead {
		d.OutReads = uint32(cfg.OutReads)
	}
	return d
}

// dialRetry dials the data connection, retrying while the server is not
// yet listening again (rdma_cm_client_connection retries too).
func dialRetry(ctx context.Context, addr string, cfg *mpa.Config) (*mpa.Conn, error) {
	for {
		c, err := dialMPA(ctx, addr, cfg)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// closeBoth closes the data and control endpoints at once (each side
// disconnects after the closing handshake).
func closeBoth(data *endpoint, ctl *ctrl) error {
	var wg sync.WaitGroup
	var derr, cerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if data != nil {
			derr = data.close(10 * time.Second)
		}
	}()
	cerr = ctl.close(10 * time.Second)
	wg.Wait()
	if derr != nil {
		return fmt.Errorf("siw: closing the perftest data connection: %w", derr)
	}
	if cerr != nil {
		return fmt.Errorf("siw: closing the perftest control connection: %w", cerr)
	}
	return nil
}

// perftestSession is one perftest test in progress: its control channel
// and, once connected, its data endpoint.
type perftestSession struct {
	ctl  *ctrl
	data *endpoint
	res  *PerftestResult
}

// fail aborts both connections and returns err with the result so far.
func (s *perftestSession) fail(err error) (PerftestResult, error) {
	s.data.abort()
	s.ctl.abort()
	return *s.res, err
}

// startPerftest runs what both sides of a perftest test share, from the
// control connection cc to the exchange of pingpong_dest: the preamble,
// the handshake before rdma_cm connects, the data connection (openData
// dials or accepts it within StepTimeout), its buffers, and the handshakes
// after it. On error both connections are aborted.
func startPerftest(ctx context.Context, cc *mpa.Conn, client bool, cfg *PerftestConfig, res *PerftestResult,
	openData func(context.Context) (*mpa.Conn, error)) (s *perftestSession, bufs *dataBuffers, my, rem Dest, err error) {
	res.Ctrl = cc.Params()
	ctl, err := newCtrl(ctx, cc, client, cfg.StepTimeout)
	if err != nil {
		return nil, nil, my, rem, err
	}
	s = &perftestSession{ctl: ctl, res: res}
	abort := func(err error) (*perftestSession, *dataBuffers, Dest, Dest, error) {
		_, err = s.fail(err)
		return nil, nil, my, rem, err
	}
	cycle, err := ctl.preamble(ctx, cfg, res)
	if err != nil {
		return abort(err)
	}
	if _, err := ctl.handshake(ctx, "sync before rdma_cm connect", Dest{}); err != nil {
		return abort(err)
	}
	stepCtx, cancel := context.WithTimeout(ctx, cfg.StepTimeout)
	dc, err := openData(stepCtx)
	cancel()
	if err != nil {
		return abort(fmt.Errorf("siw: perftest data connection: %w", err))
	}
	res.Data = dc.Params()
	s.data, bufs, err = setupData(ctx, dc, cfg, client, cycle)
	if err != nil {
		return abort(err)
	}
	if _, err := ctl.handshake(ctx, "sync after rdma_cm connect", Dest{}); err != nil {
		return abort(err)
	}
	my = myDest(cfg, bufs)
	res.Dest = my
	if rem, err = ctl.handshake(ctx, "pingpong_dest", my); err != nil {
		return abort(err)
	}
	res.PeerDest = rem
	return s, bufs, my, rem, nil
}

// PerftestClient runs the client side of cfg.Verb's bandwidth test against
// a perftest server (`ib_<verb>_bw -R`) at addr, or our PerftestServe.
func PerftestClient(ctx context.Context, addr string, cfg PerftestConfig) (PerftestResult, error) {
	res := PerftestResult{Verb: cfg.Verb}
	if err := cfg.defaults(); err != nil {
		return res, err
	}
	stepCtx, cancel := context.WithTimeout(ctx, cfg.StepTimeout)
	cc, err := dialMPA(stepCtx, addr, ctrlConfig(&cfg))
	cancel()
	if err != nil {
		return res, fmt.Errorf("siw: perftest control connection: %w", err)
	}
	sess, bufs, my, rem, err := startPerftest(ctx, cc, true, &cfg, &res, func(ctx context.Context) (*mpa.Conn, error) {
		return dialRetry(ctx, addr, dataConfig(&cfg))
	})
	if err != nil {
		return res, err
	}
	ctl, data, fail := sess.ctl, sess.data, sess.fail
	for i := range cfg.Verb.preTrafficHandshakes() {
		d, err := ctl.handshake(ctx, fmt.Sprintf("pre-traffic sync %d", i+1), my)
		if err != nil {
			return fail(err)
		}
		if d.RKey != rem.RKey || d.VAddr != rem.VAddr {
			return fail(fmt.Errorf("%w: the server's pingpong_dest changed: %+v, then %+v", ErrPerftestMsg, rem, d))
		}
	}
	tctx, cancel := context.WithTimeout(ctx, cfg.TrafficTimeout)
	minOp, err := clientTraffic(tctx, data.ep, &cfg, bufs, rem, &res)
	cancel()
	if err != nil {
		return fail(err)
	}
	res.finish(cfg.Size, minOp)
	if cfg.Verb != VerbSend {
		if _, err := ctl.handshake(ctx, "post-traffic sync", my); err != nil {
			return fail(err)
		}
		rep, err := xchgReports(ctx, ctl, Report{Size: uint64(cfg.Size), Iters: uint64(res.Iters),
			BWPeak: res.BWPeak, BWAvg: res.BWAvg, MsgRate: res.MsgRate})
		if err != nil {
			return fail(err)
		}
		res.PeerReport = &rep
	}
	if _, err := ctl.handshake(ctx, "close", my); err != nil {
		return fail(err)
	}
	return res, closeBoth(data, ctl)
}

func xchgReports(ctx context.Context, ctl *ctrl, my Report) (Report, error) {
	var got [5][]byte
	names := [5]string{"report size", "report iters", "report bw_peak", "report bw_avg", "report msgRate_avg"}
	for i, f := range my.Fields() {
		var err error
		if got[i], err = ctl.xchg(ctx, names[i], f, ReportFieldLen); err != nil {
			return Report{}, err
		}
	}
	return ParseReport(got)
}

// clientTraffic runs the Writes, Reads or Sends and returns the shortest
// time from posting one work request to its completion (perftest's peak).
func clientTraffic(ctx context.Context, ep *rdmap.Endpoint, cfg *PerftestConfig, b *dataBuffers, rem Dest, res *PerftestResult) (time.Duration, error) {
	depth := cfg.TxDepth
	slots := 0
	if cfg.Verb == VerbRead {
		if ep.Config().ORD <= 0 {
			return 0, fmt.Errorf("siw: perftest read: no outbound RDMA Reads negotiated (ORD %d)", ep.Config().ORD)
		}
		slots = len(b.sink.Bytes()) / cfg.Size
		depth = min(depth, slots)
	}
	var credit *uint32
	if cfg.Verb == VerbSend {
		credit = (*uint32)(unsafe.Pointer(&b.adv.Bytes()[0]))
	}
	var ref []byte // Read: the first Read's data, which every later Read must return
	posted := make([]time.Time, cfg.Iters)
	// signaled[i]: work request i asks for a completion: every mod-th
	// and the last (perftest's cq_mod, at most the depth, here the Read
	// sink's slots too, so that a full window holds one), and the last
	// posted before the client waits for Send credits, so that there is a
	// completion to wait for meanwhile.
	mod := min(cfg.CQMod, depth)
	signaled := make([]bool, cfg.Iters)
	for i := mod - 1; i < cfg.Iters; i += mod {
		signaled[i] = true
	}
	signaled[cfg.Iters-1] = true
	lastSignaled := -1 // the last signaled work request posted
	batch := make([]rdmap.SendWR, 0, depth)
	var minOp time.Duration
	next, done := 0, 0
	t0 := time.Now()
	for done < cfg.Iters {
		// The work requests that may go now are posted as one list
		// (perftest posts one at a time, to a queue in shared memory; a
		// list here is what keeps the transmit goroutine from being woken
		// for each).
		batch = batch[:0]
		for next < cfg.Iters && next-done < depth {
			if cfg.Verb == VerbSend && next >= cfg.RxDepth {
				// ctx_set_credit_wqes: the server has at most RxDepth
				// receives posted beyond the count it reported.
				c := loadPlaced(credit)
				res.Credits = int(c)
				if next-int(c) >= cfg.RxDepth {
					if len(batch) > 0 {
						signaled[next-1] = true
						batch[len(batch)-1].Unsignaled = false
						break // post, then wait for a completion; credits come meanwhile
					}
					if lastSignaled >= done {
						break // wait for a completion, credits come meanwhile
					}
					if err := ctx.Err(); err != nil {
						return 0, fmt.Errorf("siw: perftest send: waiting for credits after %d Sends (credit %d): %w", next, c, err)
					}
					time.Sleep(20 * time.Microsecond)
					continue
				}
			}
			wr := rdmap.SendWR{ID: uint64(next), RemoteSTag: rem.RKey, RemoteTO: rem.VAddr, Unsignaled: !signaled[next]}
			switch cfg.Verb {
			case VerbWrite:
				wr.Op, wr.Local = rdmap.WRWrite, b.src
			case VerbSend:
				wr.Op, wr.Local = rdmap.WRSend, b.src
			case VerbRead:
				wr.Op, wr.Sink, wr.SinkOffset, wr.Length = rdmap.WRRead, b.sink, uint64(next%slots*cfg.Size), uint32(cfg.Size)
			}
			posted[next] = time.Now()
			batch = append(batch, wr)
			next++
		}
		if len(batch) > 0 {
			if n, err := ep.PostSend(batch...); err != nil {
				return 0, fmt.Errorf("siw: perftest %v %d: %w", cfg.Verb, next-len(batch)+n, epErr(ep, err))
			}
			for i := next - 1; i >= next-len(batch); i-- {
				if signaled[i] {
					lastSignaled = i
					break
				}
			}
		}
		if lastSignaled < done {
			// A full window holds a signalled request (mod is at most the
			// depth), and a wait for credits posts or finds one first.
			return 0, fmt.Errorf("siw: perftest %v: no signalled work request among %d outstanding (%d done)", cfg.Verb, next-done, done)
		}
		c, err := ep.Config().SendCQ.Poll(ctx)
		if err == nil {
			err = c.Err
		}
		if err != nil {
			return 0, fmt.Errorf("siw: perftest %v: after %d of %d completions: %w", cfg.Verb, done, cfg.Iters, epErr(ep, err))
		}
		want := done
		for !signaled[want] {
			want++
		}
		if c.WRID != uint64(want) {
			return 0, fmt.Errorf("siw: perftest %v: completion of work request %d, want %d", cfg.Verb, c.WRID, want)
		}
		res.Completions++
		if d := time.Since(posted[want]); minOp == 0 || d < minOp {
			minOp = d
		}
		// The completion completes the unsignaled work requests before
		// it (RFC 5040 §5.5: in the order posted).
		for ; done <= want; done++ {
			if cfg.Verb == VerbRead {
				off := done % slots * cfg.Size
				got := b.sink.Bytes()[off : off+cfg.Size]
				if ref == nil {
					ref = bytes.Clone(got)
				} else if !bytes.Equal(got, ref) {
					return 0, fmt.Errorf("%w: RDMA Read %d returned other data than Read 0 from the same static buffer", ErrPerftestData, done)
				}
				res.Verified++
			}
		}
	}
	res.Elapsed = time.Since(t0)
	res.Iters = done
	res.Bytes = int64(done) * int64(cfg.Size)
	return minOp, nil
}

// loadPlaced reads a word that the peer's RDMA Write places, as perftest
// reads its credit word (a volatile read of memory a NIC writes by DMA):
// no completion orders the placement before the read, so the Go memory
// model has no happens-before edge for it and the race detector would
// report DDP's placement copy against any read. The word is aligned and a
// 32-bit load of it is one instruction; a stale value only delays the
// next Send until a later read. Kept out of the race detector's view
// (norace) and of inlining (each call loads afresh).
//
//go:norace
//go:noinline
func loadPlaced(p *uint32) uint32 { return *p }

// PerftestListenConfig returns base as the MPA configuration of a
// listener for PerftestServe: both of a client's connections arrive there,
// and an ib_read_bw client asks for IRD = ORD = out_reads (128) on its data
// connection, so the Responder offers cfg.OutReads (RFC 6581 §9.1; the
// control connection's Initiator asks for 0, which caps our ORD to 0).
func PerftestListenConfig(base mpa.Config, cfg PerftestConfig) *mpa.Config {
	_ = cfg.defaults()
	base.IRD, base.ORD = uint16(cfg.OutReads), uint16(cfg.OutReads)
	return &base
}

// PerftestServe runs the server side of cfg.Verb's bandwidth test for the
// next client accepted from ln (a perftest client, `ib_<verb>_bw -R
// ADDR`, or our PerftestClient). Both its connections come through ln,
// which PerftestListenConfig configures.
func PerftestServe(ctx context.Context, ln *mpa.Listener, cfg PerftestConfig) (PerftestResult, error) {
	res := PerftestResult{Verb: cfg.Verb}
	if err := cfg.defaults(); err != nil {
		return res, err
	}
	cc, err := ln.Accept(ctx)
	if err != nil {
		return res, fmt.Errorf("siw: perftest control connection: %w", err)
	}
	sess, bufs, my, rem, err := startPerftest(ctx, cc, false, &cfg, &res, ln.Accept)
	if err != nil {
		return res, err
	}
	ctl, data, fail := sess.ctl, sess.data, sess.fail
	for i := range cfg.Verb.preTrafficHandshakes() {
		if _, err := ctl.handshake(ctx, fmt.Sprintf("pre-traffic sync %d", i+1), my); err != nil {
			return fail(err)
		}
	}
	t0 := time.Now()
	switch cfg.Verb {
	case VerbSend:
		tctx, cancel := context.WithTimeout(ctx, cfg.TrafficTimeout)
		err = serveSends(tctx, data.ep, &cfg, bufs, rem, &res)
		cancel()
		if err != nil {
			return fail(err)
		}
		res.Elapsed = time.Since(t0)
	default:
		// The client's Writes or Reads need nothing from us; its
		// post-traffic handshake ends them.
		ctl.timeout = cfg.TrafficTimeout
		_, err := ctl.handshake(ctx, "post-traffic sync", my)
		ctl.timeout = cfg.StepTimeout
		if err != nil {
			return fail(err)
		}
		res.Elapsed = time.Since(t0)
		res.Iters, res.Bytes = cfg.Iters, int64(cfg.Iters)*int64(cfg.Size)
		res.finish(cfg.Size, 0)
		rep, err := xchgReports(ctx, ctl, Report{Size: uint64(cfg.Size), Iters: uint64(res.Iters),
			BWPeak: res.BWPeak, BWAvg: res.BWAvg, MsgRate: res.MsgRate})
		if err != nil {
			return fail(err)
		}
		res.PeerReport = &rep
		if rep.Size != uint64(cfg.Size) || rep.Iters != uint64(cfg.Iters) {
			return fail(fmt.Errorf("%w: the client reports %d × %d octets, this server expects %d × %d",
				ErrPerftestMsg, rep.Iters, rep.Size, cfg.Iters, cfg.Size))
		}
	}
	res.finish(cfg.Size, 0)
	if _, err := ctl.handshake(ctx, "close", my); err != nil {
		return fail(err)
	}
	if cfg.Verb == VerbWrite {
		// The client's Writes complete when handed to its LLP and its
		// handshakes travel on the other connection: some may still be
		// in flight. Our graceful close stops placement, so let the
		// client close the data connection first (its FIN follows its
		// last Write; perftest's client and ours both close now).
		select {
		case <-data.ep.Done():
		case <-time.After(2 * time.Second):
		}
	}
	if err := closeBoth(data, ctl); err != nil {
		return res, err
	}
	if cfg.Verb == VerbWrite {
		// The data endpoint's end orders all placement before this.
		if err := checkOverwritten(bufs.adv.Bytes()[:cfg.Size], bufs.pattern[:cfg.Size]); err != nil {
			return res, err
		}
		res.Verified = 1
	}
	return res, nil
}

// checkOverwritten checks that the client's RDMA Writes replaced our fill
// pattern: perftest writes rand() octets, which match the pattern in
// about 1 of 256 positions.
func checkOverwritten(got, pattern []byte) error {
	same := 0
	for i := range got {
		if got[i] == pattern[i] {
			same++
		}
	}
	if same > len(got)/16 {
		return fmt.Errorf("%w: %d of %d octets of the Write target still hold our fill pattern", ErrPerftestData, same, len(got))
	}
	return nil
}

// serveSends receives cfg.Iters Sends, checks each (length, and the same
// octets every time: perftest sends every message from the same buffer
// slot when Size is at least half its cycle buffer) and returns credits
// (ctx_set_credit_wqes: an RDMA Write of the count of completed receives
// into the client's credit word). The client's rx depth must not be below
// cfg.RxDepth/4, or it would wait for a credit that never comes.
func serveSends(ctx context.Context, ep *rdmap.Endpoint, cfg *PerftestConfig, b *dataBuffers, rem Dest, res *PerftestResult) error {
	var ref []byte
	// perftest's server writes a credit every rx_depth/3 receives; every
	// RxDepth/4 keeps a client with the same rx depth from waiting.
	creditEvery := max(1, cfg.RxDepth/4)
	const maxPendingCredits = 64
	pendingCredits := 0
	drain := func(block bool, n int) error {
		for ; n > 0 && pendingCredits > 0; n-- {
			var c rdmap.Completion
			if block {
				var err error
				if c, err = ep.Config().SendCQ.Poll(ctx); err != nil {
					return err
				}
			} else {
				var one [1]rdmap.Completion
				if ep.Config().SendCQ.PollN(one[:]) == 0 {
					return nil
				}
				c = one[0]
			}
			if c.Err != nil {
				return fmt.Errorf("credit write: %w", c.Err)
			}
			pendingCredits--
		}
		return nil
	}
	for n := 1; n <= cfg.Iters; n++ {
		c, err := ep.Config().RecvCQ.Poll(ctx)
		if err == nil {
			err = c.Err
		}
		if err != nil {
			return fmt.Errorf("siw: perftest send: waiting for Send %d of %d: %w", n, cfg.Iters, epErr(ep, err))
		}
		buf := b.recvs[c.WRID]
		if c.Length != cfg.Size {
			return fmt.Errorf("%w: Send %d has %d octets, want %d", ErrPerftestData, n, c.Length, cfg.Size)
		}
		if ref == nil {
			ref = bytes.Clone(buf)
		} else if !bytes.Equal(buf, ref) {
			return fmt.Errorf("%w: Send %d carries other octets than Send 1 from the same source buffer", ErrPerftestData, n)
		}
		res.Verified++
		if err := ep.PostRecv(c.WRID, buf); err != nil {
			return fmt.Errorf("siw: perftest send: reposting: %w", epErr(ep, err))
		}
		res.Iters, res.Bytes = n, int64(n)*int64(cfg.Size)
		if n%creditEvery == 0 || n == cfg.Iters {
			for pendingCredits >= maxPendingCredits {
				if err := drain(true, 1); err != nil {
					return fmt.Errorf("siw: perftest send: %w", epErr(ep, err))
				}
			}
			if _, err := ep.PostSend(rdmap.SendWR{Op: rdmap.WRWrite, Local: AppendCredit(nil, uint32(n)),
				RemoteSTag: rem.RKey, RemoteTO: rem.VAddr}); err != nil {
				return fmt.Errorf("siw: perftest send: credit: %w", epErr(ep, err))
			}
			pendingCredits++
			res.Credits++
		}
		if err := drain(false, pendingCredits); err != nil {
			return fmt.Errorf("siw: perftest send: %w", epErr(ep, err))
		}
	}
	if err := drain(true, pendingCredits); err != nil {
		return fmt.Errorf("siw: perftest send: %w", epErr(ep, err))
	}
	return nil
}
