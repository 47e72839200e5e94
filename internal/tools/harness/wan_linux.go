//go:build linux

package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tcpcc"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/netem"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// RunWAN measures, on each path of the grid, raw TCP, raw SCTP of each
// userspace stack, and RDMA Write and Read of 64 KiB and the 64-octet
// Send round trip over each LLP, every figure beside raw TCP's on the same
// path in the same run; then the recovery from a 1 s outage. The passive
// side lives in namespace A, the active side in B; the bottleneck and the
// impairment apply in both directions.
func RunWAN(cfg WANConfig) (*WANResults, error) {
	cfg.defaults()
	if os.Geteuid() != 0 {
		return nil, errWANUnsupported
	}
	res := &WANResults{Config: cfg, Machine: describe()}
	start := time.Now()

	// The emulator alone: the bottleneck without delay or loss.
	l, err := cfg.newPath(netem.Profile{Rate: cfg.Rate}, cfg.linkOptions())
	if err != nil {
		return nil, err
	}
	res.Backend, res.TCPCongestion = l.Backend, l.TCPCongestion()
	res.EmulatorUDP, err = wanUDP(l, float64(cfg.Rate)*1.2, 2*time.Second)
	if err == nil {
		var bps float64
		bps, err = wanTCP(l, 2*time.Second)
		res.EmulatorTCP = bps / 1e6
	}
	l.Close()
	if err != nil {
		return nil, fmt.Errorf("harness: the emulator check: %w", err)
	}
	cfg.logf("emulator (%s, TCP %s) at %s: UDP %.1f Mbit/s, TCP %.1f Mbit/s", res.Backend, res.TCPCongestion, netem.FormatRate(cfg.Rate), res.EmulatorUDP, res.EmulatorTCP)

	if cfg.TargetRuns > 0 && slices.Contains(cfg.LLPs, transport.SCTPNative) {
		res.Targets, err = measureTargets(&cfg)
		if err != nil {
			return nil, err
		}
	}
	for _, rtt := range cfg.RTTs {
		for _, loss := range cfg.Losses {
			cell, err := measureWANCell(&cfg, rtt, loss)
			if err != nil {
				return nil, err
			}
			res.Cells = append(res.Cells, cell)
		}
	}
	if cfg.OutageRTT > 0 {
		res.Outages, err = measureOutages(&cfg)
		if err != nil {
			return nil, err
		}
	}
	if cfg.FairRTT > 0 {
		res.Shares, err = measureShares(&cfg)
		if err != nil {
			return nil, err
		}
	}
	if cfg.HOLRTT > 0 {
		res.HOL, err = measureHOL(&cfg)
		if err != nil {
			return nil, err
		}
	}
	res.Took = time.Since(start)
	return res, nil
}

// linkOptions are the options of every link of the run.
func (c *WANConfig) linkOptions() netem.LinkOptions {
	return netem.LinkOptions{Backend: c.Backend, TCPCongestion: c.TCPCongestion}
}

// measureWANCell measures one path of the grid, cfg.Runs times.
func measureWANCell(cfg *WANConfig, rtt time.Duration, loss float64) (WANCell, error) {
	cell := WANCell{RTT: rtt, Loss: loss}
	p := netem.Profile{Delay: rtt / 2, Loss: loss, Rate: cfg.Rate}
	l, err := cfg.newPath(p, cfg.linkOptions())
	if err != nil {
		return cell, err
	}
	defer l.Close()
	d := cfg.duration(rtt)
	iters := max(min(cfg.PingIters, int(d/max(rtt, time.Millisecond))), 5)

	servers := map[string]*server{}
	for _, llp := range cfg.LLPs {
		s, err := startWANServer(l, llp)
		if err != nil {
			return cell, err
		}
		defer s.stop()
		servers[llp] = s
	}
	samples := map[[2]string][]float64{}
	errs := map[[2]string]error{}
	add := func(llp, what string, v float64, err error) {
		k := [2]string{llp, what}
		if err != nil {
			errs[k] = err
			return
		}
		samples[k] = append(samples[k], v)
	}
	for run := range cfg.Runs {
		bps, err := wanTCP(l, d)
		add("tcp", "raw", bps/1e6, err)
		for _, llp := range cfg.LLPs {
			if llp == transport.MPA {
				continue
			}
			bps, err := wanRawSCTP(l, llp, d)
			add(llp, "raw", bps/1e6, err)
		}
		for _, llp := range cfg.LLPs {
			for _, t := range []bench.Test{bench.TestWrite, bench.TestRead} {
				r, err := wanRDMA(l, servers[llp], llp, bench.Config{Test: t, Size: 64 << 10, Duration: d}, rtt)
				v := 0.0
				if r != nil {
					v = r.Forward.Gbps() * 1e3
				}
				add(llp, t.String(), v, err)
			}
		}
		tcpRTT, err := wanTCPRTT(l, 64, iters)
		add("tcp", "rtt", float64(tcpRTT)/1e6, err)
		for _, llp := range cfg.LLPs {
			r, err := wanRDMA(l, servers[llp], llp, bench.Config{Test: bench.TestSend, Size: 64, Latency: true, Iters: uint64(iters)}, rtt)
			v := 0.0
			if r != nil {
				v = float64(r.Forward.Lat.Median) / 1e6
			}
			add(llp, "rtt", v, err)
		}
		cfg.logf("RTT %v loss %g%% run %d: %s", rtt, loss*100, run+1, describeSamples(samples, run))
	}
	base := map[string]float64{"raw": median(samples[[2]string{"tcp", "raw"}]), "rtt": median(samples[[2]string{"tcp", "rtt"}])}
	base["write"], base["read"] = base["raw"], base["raw"]
	order := append([]string{"tcp"}, cfg.LLPs...)
	for _, llp := range order {
		for _, what := range []string{"raw", "write", "read", "rtt"} {
			k := [2]string{llp, what}
			v, ok := samples[k]
			e := errs[k]
			if !ok && e == nil {
				continue
			}
			f := WANFigure{LLP: llp, What: what, Err: e, Base: base[what]}
			if len(v) > 0 {
				f.Value = median(v)
				if f.Base > 0 {
					f.Ratio = f.Value / f.Base
				}
			}
			cell.Figures = append(cell.Figures, f)
		}
	}
	return cell, nil
}

// measureTargets makes cfg.TargetRuns paired runs of raw sctp-native,
// RDMA Write and RDMA Read on the target path, one after the other in
// each run, on one path and one server.
func measureTargets(cfg *WANConfig) ([]TargetRun, error) {
	p := netem.Profile{Delay: cfg.TargetRTT / 2, Loss: cfg.TargetLoss, Rate: cfg.Rate}
	l, err := cfg.newPath(p, cfg.linkOptions())
	if err != nil {
		return nil, err
	}
	defer l.Close()
	s, err := startWANServer(l, transport.SCTPNative)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	d := cfg.targetDuration()
	rdma := func(t bench.Test) (float64, error) {
		r, err := wanRDMA(l, s, transport.SCTPNative, bench.Config{Test: t, Size: 64 << 10, Duration: d}, cfg.TargetRTT)
		if err != nil {
			return 0, err
		}
		return r.Forward.Gbps() * 1e3, nil
	}
	runs := make([]TargetRun, 0, cfg.TargetRuns)
	for i := range cfg.TargetRuns {
		var r TargetRun
		var bps float64
		bps, r.RawErr = wanRawSCTP(l, transport.SCTPNative, d)
		r.Raw = bps / 1e6
		r.Write, r.WriteErr = rdma(bench.TestWrite)
		r.Read, r.ReadErr = rdma(bench.TestRead)
		cfg.logf("target path (RTT %v, loss %g%%) run %d: raw %.3g Write %.3g Read %.3g Mbit/s (errors: %v %v %v)",
			cfg.TargetRTT, cfg.TargetLoss*100, i+1, r.Raw, r.Write, r.Read, r.RawErr, r.WriteErr, r.ReadErr)
		runs = append(runs, r)
	}
	return runs, nil
}

// describeSamples is a progress line of one run's figures.
func describeSamples(s map[[2]string][]float64, run int) string {
	keys := make([][2]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		if a[1] < b[1] {
			return -1
		}
		if a[1] > b[1] {
			return 1
		}
		return 0
	})
	out := ""
	for _, k := range keys {
		if len(s[k]) > run {
			out += fmt.Sprintf(" %s/%s %.3g", k[0], k[1], s[k][run])
		}
	}
	return out
}

// wanPath is an emulated path of a run: its link, and the congestion
// control of the run's native SCTP.
type wanPath struct {
	*netem.Link
	sctpCC string
}

// newPath creates the link of a path of the run.
func (c *WANConfig) newPath(p netem.Profile, o netem.LinkOptions) (*wanPath, error) {
	l, err := netem.NewLink(p, o)
	if err != nil {
		return nil, err
	}
	return &wanPath{Link: l, sctpCC: c.SCTPCongestion}, nil
}

// nativeConfig is the configuration of raw native SCTP on l.
func (l *wanPath) nativeConfig() native.Config {
	return native.Config{CongestionControl: l.sctpCC}
}

// wanOptions are the transport options of llp on l: MPA's connections
// use the link's TCP congestion control, as raw TCP does, and native
// SCTP the run's.
func wanOptions(l *wanPath, llp string) transport.Options {
	o := transport.Options{LLP: llp}
	switch llp {
	case transport.MPA:
		o.MPA.TCPCongestion = l.TCPCongestion()
	case transport.SCTPNative:
		o.Native.CongestionControl = l.sctpCC
	}
	return o
}

// startWANServer starts a bench server for llp in namespace A.
func startWANServer(l *wanPath, llp string) (*server, error) {
	return startServerIn(wanOptions(l, llp), net.JoinHostPort(l.AddrA, "0"), l.InA)
}

// wanRDMA runs one bench test from namespace B (every socket of the
// client is opened by transport.Dial in the calling goroutine, here on
// B's thread). The stall watchdog allows for the path's retransmission
// timeouts.
func wanRDMA(l *wanPath, s *server, llp string, c bench.Config, rtt time.Duration) (*bench.Result, error) {
	c.Transport = wanOptions(l, llp)
	c.Addr = s.addr
	c.StallTimeout = max(15*time.Second, 60*rtt)
	c.ConnectTimeout = max(10*time.Second, 40*rtt)
	var r *bench.Result
	err := l.InB(func() (err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r, err = bench.Run(ctx, c)
		return err
	})
	return r, err
}

// flow is a bulk transfer from namespace B to A that runs until stopped:
// got counts the octets A received.
type flow struct {
	name string
	got  *atomic.Int64
	stop func()
	// sent counts the octets the writer handed to the stack and halt
	// stops the writer and returns once it stopped; both only on the raw
	// SCTP flows (measureDelivered).
	sent *atomic.Int64
	halt func()
}

// measure runs the flows together for d and returns each one's bits per
// second (octets received in d).
func measure(d time.Duration, flows ...*flow) []float64 {
	for _, f := range flows {
		f.got.Store(0)
	}
	time.Sleep(d)
	out := make([]float64, len(flows))
	for i, f := range flows {
		out[i] = float64(f.got.Load()) * 8 / d.Seconds()
	}
	return out
}

// startTCPFlow starts raw TCP from B to A: one connection, 64 KiB
// writes.
func startTCPFlow(l *wanPath) (*flow, error) {
	ln, err := tcpListenA(l)
	if err != nil {
		return nil, err
	}
	f := &flow{name: "tcp", got: new(atomic.Int64)}
	accepted := make(chan net.Conn, 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		accepted <- c
		buf := make([]byte, 256<<10)
		for {
			n, err := c.Read(buf)
			f.got.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	c, err := tcpDialB(l, ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		<-readerDone
		return nil, err
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	// Both ends are closed by stop: the link may be torn down right
	// after, and a FIN in flight would never reach the reader.
	f.stop = func() {
		_ = c.Close()
		_ = ln.Close()
		select {
		case sc := <-accepted:
			_ = sc.Close()
		case <-readerDone:
		}
		<-readerDone
		<-writerDone
	}
	return f, nil
}

// tcpListenA listens on TCP in namespace A.
func tcpListenA(l *wanPath) (ln net.Listener, err error) {
	err = l.InA(func() (err error) {
		lc := net.ListenConfig{Control: tcpcc.Control(l.TCPCongestion())}
		ln, err = lc.Listen(context.Background(), "tcp4", net.JoinHostPort(l.AddrA, "0"))
		return err
	})
	return ln, err
}

// tcpDialB connects from namespace B to addr.
func tcpDialB(l *wanPath, addr string) (c net.Conn, err error) {
	err = l.InB(func() (err error) {
		d := net.Dialer{Timeout: 10 * time.Second, Control: tcpcc.Control(l.TCPCongestion())}
		c, err = d.Dial("tcp4", addr)
		return err
	})
	return c, err
}

// wanTCP is raw TCP from B to A for d: the octets A received in d, as
// bits per second.
func wanTCP(l *wanPath, d time.Duration) (float64, error) {
	f, err := startTCPFlow(l)
	if err != nil {
		return 0, err
	}
	defer f.stop()
	bps := measure(d, f)[0]
	if bps == 0 {
		return 0, errors.New("raw TCP: nothing arrived")
	}
	return bps, nil
}

// wanTCPRTT is the median round trip of size-octet ping-pongs over TCP.
func wanTCPRTT(l *wanPath, size, n int) (time.Duration, error) {
	ln, err := tcpListenA(l)
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := tcpDialB(l, ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetNoDelay(true)
	buf := make([]byte, size)
	rtts := make([]time.Duration, 0, n)
	_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
	for range n {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0, err
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], nil
}

// startSCTPFlow starts raw SCTP of one userspace stack from B to A:
// user messages of the largest size that fits a packet, on one stream of
// one association.
func startSCTPFlow(l *wanPath, llp string) (*flow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		accept func(context.Context) (backend.Transport, error)
		closeL func() error
		addr   string
		dial   func(context.Context) (backend.Transport, error)
	)
	err := l.InA(func() error {
		switch llp {
		case transport.SCTPNative:
			ln, err := native.Stack(l.nativeConfig(), nil).Listen(net.JoinHostPort(l.AddrA, "0"))
			if err != nil {
				return err
			}
			accept = func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) }
			closeL, addr = ln.Close, ln.Addr().String()
			dial = func(ctx context.Context) (backend.Transport, error) {
				return native.Stack(l.nativeConfig(), nil).Dial(ctx, addr)
			}
		case transport.SCTPKernel:
			ln, err := kernel.Stack(kernel.Config{}).Listen(net.JoinHostPort(l.AddrA, "0"))
			if err != nil {
				return err
			}
			accept = func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) }
			closeL, addr = ln.Close, ln.Addr().String()
			dial = func(ctx context.Context) (backend.Transport, error) {
				return kernel.Stack(kernel.Config{}).Dial(ctx, addr)
			}
		case transport.SCTPPion:
			ln, err := pion.Stack(pion.Config{}).Listen(net.JoinHostPort(l.AddrA, "0"))
			if err != nil {
				return err
			}
			accept = func(ctx context.Context) (backend.Transport, error) { return ln.Accept(ctx) }
			closeL, addr = ln.Close, ln.Addr().String()
			dial = func(ctx context.Context) (backend.Transport, error) { return pion.Stack(pion.Config{}).Dial(ctx, addr) }
		default:
			return fmt.Errorf("raw %s: not an SCTP stack", llp)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	dialB := func(ctx context.Context) (t backend.Transport, err error) {
		err = l.InB(func() (err error) {
			t, err = dial(ctx)
			return err
		})
		return t, err
	}
	cl, sv, err := connectPair(ctx, accept, dialB)
	if err != nil {
		_ = closeL()
		return nil, err
	}
	f := &flow{name: llp, got: new(atomic.Int64), sent: new(atomic.Int64)}
	sv.Start(func(_ uint16, _ uint32, b []byte) { f.got.Add(int64(len(b))) }, func(error) {})
	cl.Start(func(uint16, uint32, []byte) {}, func(error) {})
	writerDone := make(chan struct{})
	var halted atomic.Bool
	go func() {
		defer close(writerDone)
		buf := make([]byte, cl.MaxMessage())
		for !halted.Load() && cl.WriteMsg(1, backend.PPIDSegment, buf) == nil {
			f.sent.Add(int64(len(buf)))
		}
	}()
	f.halt = func() {
		halted.Store(true)
		<-writerDone
	}
	f.stop = func() {
		halted.Store(true)
		_ = cl.Abort() // unblocks the writer
		<-writerDone
		_ = sv.Abort()
		_ = closeL()
	}
	return f, nil
}

// wanRawSCTP is raw SCTP of one userspace stack from B to A for d, in
// bits per second, measured as bench measures an RDMA Write
// (measureDelivered).
func wanRawSCTP(l *wanPath, llp string, d time.Duration) (float64, error) {
	f, err := startSCTPFlow(l, llp)
	if err != nil {
		return 0, err
	}
	defer f.stop()
	bps, err := measureDelivered(d, f.got, f.sent, f.halt, drainTimeout)
	if err != nil {
		return 0, fmt.Errorf("raw %s: %w", llp, err)
	}
	if bps == 0 {
		return 0, fmt.Errorf("raw %s: nothing arrived", llp)
	}
	return bps, nil
}

// startFlow starts a raw flow of llp ("tcp" or a userspace SCTP stack).
func startFlow(l *wanPath, llp string) (*flow, error) {
	if llp == "tcp" {
		return startTCPFlow(l)
	}
	return startSCTPFlow(l, llp)
}

// wanUDP offers UDP datagrams of 1400 octets from B to A at rate bits per
// second for d and returns the rate that arrived, in Mbit/s.
func wanUDP(l *wanPath, rate float64, d time.Duration) (float64, error) {
	var a, b *net.UDPConn
	if err := l.InA(func() (err error) {
		a, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(l.AddrA)})
		return err
	}); err != nil {
		return 0, err
	}
	defer a.Close()
	if err := l.InB(func() (err error) {
		b, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(l.AddrB)})
		return err
	}); err != nil {
		return 0, err
	}
	defer b.Close()
	var got atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			_ = a.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			n, _, err := a.ReadFromUDP(buf)
			if err != nil {
				return
			}
			got.Add(int64(n + 28))
		}
	}()
	pkt := make([]byte, 1400)
	to := a.LocalAddr().(*net.UDPAddr)
	start := time.Now()
	sent := 0
	for time.Since(start) < d {
		if float64(sent)*8 > rate*time.Since(start).Seconds() {
			time.Sleep(50 * time.Microsecond)
			continue
		}
		if _, err := b.WriteToUDP(pkt, to); err != nil {
			return 0, err
		}
		sent += len(pkt) + 28
	}
	<-done
	return float64(got.Load()) * 8 / d.Seconds() / 1e6, nil
}

// measureOutages runs raw TCP and an RDMA Write over each LLP through a
// path of cfg.OutageRTT on which the link goes down for 1 s one second
// in, and reports how long after the link came back each flow moved
// again.
func measureOutages(cfg *WANConfig) ([]Outage, error) {
	p := netem.Profile{Delay: cfg.OutageRTT / 2, Rate: cfg.Rate}
	var out []Outage
	for _, llp := range append([]string{"tcp"}, cfg.LLPs...) {
		l, err := cfg.newPath(p, cfg.linkOptions())
		if err != nil {
			return nil, err
		}
		o := Outage{LLP: llp}
		o.Recovery, o.Err = outageRecovery(l, llp, cfg.OutageRTT)
		l.Close()
		cfg.logf("outage of 1 s, RTT %v: %s moved again %v after the link came back (%v)", cfg.OutageRTT, llp, o.Recovery, o.Err)
		out = append(out, o)
	}
	return out, nil
}

// outageRecovery runs one flow for 6 s with the link down from 1 s to
// 2 s and returns the time from the link coming back to the flow's next
// progress (octets for TCP, completed operations for RDMA).
func outageRecovery(l *wanPath, llp string, rtt time.Duration) (time.Duration, error) {
	progress := new(atomic.Int64)
	flowDone := make(chan error, 1)
	var stop func()
	if llp == "tcp" {
		f, err := startTCPFlow(l)
		if err != nil {
			return 0, err
		}
		progress = f.got
		stop = f.stop
		close(flowDone)
	} else {
		s, err := startWANServer(l, llp)
		if err != nil {
			return 0, err
		}
		defer s.stop()
		ctr := &bench.Counters{}
		go func() {
			_, err := wanRDMA(l, s, llp, bench.Config{Test: bench.TestWrite, Size: 64 << 10, Duration: 6 * time.Second, Counters: ctr}, rtt)
			flowDone <- err
		}()
		pollStop := make(chan struct{})
		stop = func() { close(pollStop); <-flowDone }
		go func() {
			t := time.NewTicker(100 * time.Microsecond)
			defer t.Stop()
			for {
				progress.Store(int64(ctr.Ops.Load()))
				select {
				case <-t.C:
				case <-pollStop:
					return
				}
			}
		}()
	}
	var once sync.Once
	defer once.Do(stop)
	// Wait for the flow to move, then the outage.
	deadline := time.Now().Add(20 * time.Second)
	for progress.Load() == 0 {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s: no progress before the outage", llp)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(time.Second)
	if err := l.SetDown(true); err != nil {
		return 0, err
	}
	time.Sleep(time.Second)
	before := progress.Load()
	if err := l.SetDown(false); err != nil {
		return 0, err
	}
	up := time.Now()
	var rec time.Duration
	for {
		if progress.Load() != before {
			rec = time.Since(up)
			break
		}
		if time.Since(up) > 30*time.Second {
			return 0, fmt.Errorf("%s: no progress within 30 s of the link coming back", llp)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return rec, nil
}

// measureShares runs pairs of flows through one bottleneck at once for
// cfg.FairDuration: each userspace SCTP stack against TCP, each against
// itself, and TCP against TCP as the reference.
// shareOnce runs the flows of pair side by side once.
func shareOnce(cfg *WANConfig, p netem.Profile, pr [2]string) (Share, error) {
	l, err := cfg.newPath(p, cfg.linkOptions())
	if err != nil {
		return Share{}, err
	}
	defer l.Close()
	sh := Share{A: pr[0], B: pr[1]}
	fa, err := startFlow(l, pr[0])
	if err == nil {
		var fb *flow
		fb, err = startFlow(l, pr[1])
		if err == nil {
			bps := measure(cfg.FairDuration, fa, fb)
			sh.MbpsA, sh.MbpsB = bps[0]/1e6, bps[1]/1e6
			sh.Jain = jainIndex(bps...)
			fb.stop()
		}
		fa.stop()
	}
	sh.Err = err
	return sh, nil
}

func measureShares(cfg *WANConfig) ([]Share, error) {
	pairs := [][2]string{{"tcp", "tcp"}}
	for _, llp := range cfg.LLPs {
		if llp != transport.MPA {
			pairs = append(pairs, [2]string{llp, "tcp"}, [2]string{llp, llp})
		}
	}
	p := netem.Profile{Delay: cfg.FairRTT / 2, Rate: cfg.Rate}
	var out []Share
	for _, pr := range pairs {
		var runs []Share
		for range cfg.Runs {
			sh, err := shareOnce(cfg, p, pr)
			if err != nil {
				return nil, err
			}
			cfg.logf("sharing %s for %v: %s %.1f Mbit/s, %s %.1f Mbit/s, Jain %.3f (%v)", netem.FormatRate(cfg.Rate), cfg.FairDuration, sh.A, sh.MbpsA, sh.B, sh.MbpsB, sh.Jain, sh.Err)
			runs = append(runs, sh)
		}
		out = append(out, medianShare(runs))
	}
	return out, nil
}
