package harness

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// WANConfig configures RunWAN: every LLP measured over emulated wide-area
// paths (internal/tools/netem) between two network namespaces. Zero fields take
// defaults.
type WANConfig struct {
	// RTTs are the round-trip times of the grid (default 1, 10, 50 and
	// 100 ms); Losses its random loss rates per direction (default 0,
	// 0.01%, 0.1% and 1%).
	RTTs   []time.Duration
	Losses []float64
	// Rate is the bottleneck's rate in each direction, with a queue of
	// one bandwidth-delay product (default 100 Mbit/s).
	Rate int64
	// Duration of each throughput measurement (default 3 s; at least
	// minRoundTrips round trips, so that slow start and the first loss
	// do not decide a long path's figure).
	Duration time.Duration
	// PingIters round trips for each latency figure (default 50, at most
	// what fits in Duration).
	PingIters int
	// LLPs to measure (default sctp-native, sctp-pion and mpa).
	LLPs []string
	// Runs per cell; the median is reported (default 1).
	Runs int
	// OutageRTT is the round trip of the path on which a 1 s outage is
	// measured (default 10 ms; negative: none).
	OutageRTT time.Duration
	// FairRTT is the round trip of the path on which flows share the
	// bottleneck (default 10 ms; negative: no fairness runs), for
	// FairDuration each (default 30 s).
	FairRTT      time.Duration
	FairDuration time.Duration
	// HOLRTT and HOLLoss make the path of the head-of-line blocking
	// runs (default 50 ms and 1%; a negative HOLRTT: none): HOLStreams
	// concurrent RDMA Reads of HOLSize octets (default 16 and 4 KiB) on
	// as many streams of one association, where the path loses HOLLoss
	// of the packets carrying one stream's DATA and none of the others';
	// on as many MPA connections, one of which loses HOLLoss of its
	// packets; and on one MPA connection, which loses HOLLoss/HOLStreams
	// of all (the same expected number of losses, shared by every Read).
	// HOLDuration is each head-of-line run's length (default 20 s).
	HOLRTT      time.Duration
	HOLLoss     float64
	HOLStreams  int
	HOLSize     int
	HOLDuration time.Duration
	// SCTPCongestion is sctp-native's congestion control ("": its
	// default for DDP; see transport.Options.Native.CongestionControl).
	SCTPCongestion string
	// TCPCongestion is the congestion control of every TCP socket of the
	// run (raw TCP and MPA's connections; default DefaultWANTCP).
	TCPCongestion string
	// Backend of the link: "" (the kernel's netem where it exists, the
	// userspace model otherwise), "tun" or "netem".
	Backend string
	// TargetRuns paired runs of raw sctp-native, RDMA Write and RDMA Read,
	// TargetDuration each (default 9 and 30 s; a negative TargetRuns:
	// none), on the path of the target (50 ms, 0.1% loss): a
	// short run there moves by 3x with the moment the first loss ends
	// slow start (paired 10 s runs gave Write/raw 0.26–3.7, 30 s runs
	// 0.78–1.65), so the grid's few short runs cannot decide it.
	// TargetRTT and TargetLoss make that path (default 50 ms and 0.1%).
	TargetRuns     int
	TargetDuration time.Duration
	TargetRTT      time.Duration
	TargetLoss     float64
	// Progress, if not nil, receives a line per measurement.
	Progress io.Writer
	// InVM marks the kernel-SCTP run inside the qemu VM: its page
	// section is WANKernelMarks' (see WANResults.Markdown).
	InVM bool
}

// DefaultWANTCP is the TCP congestion control of WAN runs: CUBIC
// (RFC 9438), Linux's default and so the TCP most paths carry. A host
// may default to another (this project's build host runs BBR, which
// does not slow down for random loss); WANConfig.TCPCongestion chooses.
const DefaultWANTCP = "cubic"

func (c *WANConfig) defaults() {
	if len(c.RTTs) == 0 {
		c.RTTs = []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}
	}
	if len(c.Losses) == 0 {
		c.Losses = []float64{0, 0.0001, 0.001, 0.01}
	}
	if c.Rate == 0 {
		c.Rate = 100e6
	}
	if c.TCPCongestion == "" {
		c.TCPCongestion = DefaultWANTCP
	}
	if c.Duration == 0 {
		c.Duration = 3 * time.Second
	}
	if c.PingIters == 0 {
		c.PingIters = 50
	}
	if len(c.LLPs) == 0 {
		c.LLPs = []string{transport.SCTPNative, transport.SCTPPion, transport.MPA}
	}
	if c.Runs < 1 {
		c.Runs = 1
	}
	if c.OutageRTT == 0 {
		c.OutageRTT = 10 * time.Millisecond
	}
	if c.FairRTT == 0 {
		c.FairRTT = 10 * time.Millisecond
	}
	if c.FairDuration == 0 {
		c.FairDuration = 30 * time.Second
	}
	if c.HOLRTT == 0 {
		c.HOLRTT = 50 * time.Millisecond
	}
	if c.HOLLoss == 0 {
		c.HOLLoss = 0.01
	}
	if c.HOLStreams == 0 {
		c.HOLStreams = 16
	}
	if c.HOLSize == 0 {
		c.HOLSize = 4 << 10
	}
	if c.HOLDuration == 0 {
		c.HOLDuration = 20 * time.Second
	}
	if c.TargetRuns == 0 {
		c.TargetRuns = 9
	}
	if c.TargetDuration == 0 {
		c.TargetDuration = 30 * time.Second
	}
	if c.TargetRTT == 0 {
		c.TargetRTT = 50 * time.Millisecond
	}
	if c.TargetLoss == 0 {
		c.TargetLoss = 0.001
	}
}

// targetDuration is each measurement of the target runs.
func (c *WANConfig) targetDuration() time.Duration {
	return max(c.TargetDuration, minRoundTrips*c.TargetRTT)
}

// TargetRun is one paired run on the target path: raw sctp-native, then
// RDMA Write and Read over it, each in Mbit/s (0 with its error).
type TargetRun struct {
	Raw, Write, Read          float64
	RawErr, WriteErr, ReadErr error
}

// pairedRatios are what of runs (Write or Read) divided by Raw, for the
// runs where both succeeded.
func pairedRatios(runs []TargetRun, what string) []float64 {
	var out []float64
	for _, r := range runs {
		v, err := r.Write, r.WriteErr
		if what == "read" {
			v, err = r.Read, r.ReadErr
		}
		if err == nil && r.RawErr == nil && r.Raw > 0 {
			out = append(out, v/r.Raw)
		}
	}
	return out
}

func (c *WANConfig) logf(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "wan: "+format+"\n", args...)
	}
}

// minRoundTrips is the fewest round trips a WAN measurement lasts: 5 s
// at 50 ms, 10 s at 100 ms.
const minRoundTrips = 100

// holDuration is the length of a head-of-line run: one run, Runs times
// HOLDuration (a tail percentile wants the samples together).
func (c *WANConfig) holDuration() time.Duration {
	return max(c.HOLDuration, minRoundTrips*c.HOLRTT) * time.Duration(max(c.Runs, 1))
}

// duration is the measurement time on a path of round trip rtt.
func (c *WANConfig) duration(rtt time.Duration) time.Duration {
	return max(c.Duration, minRoundTrips*rtt)
}

// WANFigure is one measured quantity of a cell: a throughput in Mbit/s
// or a round trip in milliseconds, beside raw TCP's on the same path in
// the same run (Base) and their ratio.
type WANFigure struct {
	// LLP is the lower layer ("tcp" for the raw TCP baseline); What the
	// quantity: "raw", "write", "read" or "rtt".
	LLP, What string
	Value     float64
	Base      float64
	Ratio     float64
	Err       error
}

// WANCell is one path of the grid.
type WANCell struct {
	RTT     time.Duration
	Loss    float64
	Figures []WANFigure
}

// figure returns the cell's figure of llp and what.
func (c *WANCell) figure(llp, what string) (WANFigure, bool) {
	for _, f := range c.Figures {
		if f.LLP == llp && f.What == what {
			return f, true
		}
	}
	return WANFigure{}, false
}

// Outage is what a 1 s outage of the path did to one flow: the time from
// the link coming back to the flow's next progress.
type Outage struct {
	LLP      string // "tcp" or an LLP (RDMA Write)
	Recovery time.Duration
	Err      error
}

// Share is two flows sharing the bottleneck: each one's throughput in
// Mbit/s and Jain's fairness index (x1+x2)²/(2(x1²+x2²)): 1 for an even
// split, 0.5 when one flow takes everything.
type Share struct {
	A, B  string
	MbpsA float64
	MbpsB float64
	Jain  float64
	// Jains are the indexes of every run (Runs); the figures above are
	// the run with the median index.
	Jains []float64
	Err   error
}

// medianShare returns the run of runs with the median Jain index (the
// first error if any failed), with every run's index.
func medianShare(runs []Share) Share {
	var ok []Share
	for _, r := range runs {
		if r.Err != nil {
			return r
		}
		ok = append(ok, r)
	}
	if len(ok) == 0 {
		return Share{}
	}
	slices.SortFunc(ok, func(a, b Share) int { return cmp.Compare(a.Jain, b.Jain) })
	m := ok[len(ok)/2]
	for _, r := range runs {
		m.Jains = append(m.Jains, r.Jain)
	}
	return m
}

// jainIndex is Jain's fairness index of the throughputs x.
func jainIndex(x ...float64) float64 {
	var sum, sq float64
	for _, v := range x {
		sum += v
		sq += v * v
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(x)) * sq)
}

// HOL is one head-of-line blocking run: Streams streams with Depth Reads
// in flight each while the path loses packets of one of them (see
// WANConfig.HOLLoss), the per-operation latencies (post to completion)
// of the stream that loses packets (Lossy) and of the others (Others)
// merged, and the Reads completed per second. On one MPA connection
// (Streams 1) every Read shares the losses: All only.
type HOL struct {
	Name           string
	LLP            string
	Streams, Depth int
	// Lossy, Others and All are the latency distributions' summaries;
	// LossyQ, OthersQ and AllQ their values at holQuantiles (for the CDF
	// plot).
	Lossy, Others, All    bench.Latency
	LossyQ, OthersQ, AllQ []time.Duration
	OpsPerSec             float64
	// PacketsLost by the link in both directions, of Packets offered.
	PacketsLost, Packets uint64
	Err                  error
}

// holQuantiles are the quantiles of HOL's CDFs.
var holQuantiles = func() []float64 {
	var q []float64
	for i := 0; i <= 98; i += 2 {
		q = append(q, float64(i)/100)
	}
	return append(q, 0.99, 0.995, 0.999, 1)
}()

// WANResults are the figures of RunWAN.
type WANResults struct {
	Config  WANConfig
	Machine Machine
	// Backend is the link emulation used ("tun": the userspace model;
	// "netem": the kernel's); TCPCongestion the TCP congestion control
	// of raw TCP and MPA in the namespaces.
	Backend       string
	TCPCongestion string
	// EmulatorUDP and EmulatorTCP are raw UDP (offered at 1.2x) and raw
	// TCP through the bottleneck alone (no delay, no loss), in Mbit/s:
	// the emulator is not the limit when they reach Config.Rate.
	EmulatorUDP, EmulatorTCP float64
	Cells                    []WANCell
	Outages                  []Outage
	Shares                   []Share
	HOL                      []HOL
	// Targets are the paired runs on the target path (TargetRuns).
	Targets []TargetRun
	Took    time.Duration
}

// errWANUnsupported reports RunWAN on a system without network namespaces.
var errWANUnsupported = errors.New("harness: the WAN mode needs Linux network namespaces and root")

// drainTimeout bounds the wait of measureDelivered for the octets
// written but not yet delivered.
const drainTimeout = 2 * time.Minute

// measureDelivered measures a raw flow as bench measures an RDMA Write:
// the writer runs for d and is halted, and the clock stops once every
// octet it handed to the stack has arrived (got reaches sent; bench's
// zero-length Read fence after the last Write, RFC 5040 §5.5). Counting
// only what arrived within d instead leaves out the tail the RDMA figure
// includes: up to a send buffer's worth (4 MiB) drained at the
// congestion-limited rate of the end of the run, seconds on a lossy long
// path (docs/sctp-native.md, "Over emulated wide-area paths").
func measureDelivered(d time.Duration, got, sent *atomic.Int64, halt func(), timeout time.Duration) (float64, error) {
	start, got0 := time.Now(), got.Load()
	time.Sleep(d)
	halt()
	want := sent.Load()
	deadline := time.Now().Add(timeout)
	for got.Load() < want {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d octets arrived", got.Load(), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
	el := time.Since(start)
	return float64(got.Load()-got0) * 8 / el.Seconds(), nil
}
