package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sctp-rdma/sctp-rdma/transport"
)

// VethConfig configures RunVeth: RDMA Write, Read and Send over each LLP
// and raw TCP between two network namespaces joined by one veth pair, each
// side a child process of its own. Zero fields take defaults.
type VethConfig struct {
	// Exe is the sctp-rdma executable the children run (required).
	Exe string
	// MTUs of the veth pair (default 1500 and 9000); GRO the generic
	// receive offload settings of both ends (default on, then off).
	MTUs []int
	GRO  []bool
	// LLPs to measure (default sctp-native and mpa).
	LLPs []string
	// Duration of each bench run and raw TCP transfer (default 3 s).
	Duration time.Duration
	// Runs are the rounds, each of which runs every cell once; the
	// medians are reported (default 3).
	Runs int
	// Size of each operation and TCP write (default 64 KiB) and Depth
	// the operations in flight (default vethDepth).
	Size, Depth int
	// Progress, if not nil, receives a line per measurement.
	Progress io.Writer
	// Context, if not nil, ends the run early when done (the children
	// killed, the namespaces removed).
	Context context.Context
}

func (c *VethConfig) defaults() {
	if len(c.MTUs) == 0 {
		c.MTUs = []int{1500, 9000}
	}
	if len(c.GRO) == 0 {
		c.GRO = []bool{true, false}
	}
	if len(c.LLPs) == 0 {
		c.LLPs = []string{transport.SCTPNative, transport.MPA}
	}
	if c.Duration <= 0 {
		c.Duration = 3 * time.Second
	}
	if c.Runs < 1 {
		c.Runs = 3
	}
	if c.Size <= 0 {
		c.Size = 64 << 10
	}
	if c.Depth <= 0 {
		c.Depth = vethDepth
	}
	if c.Context == nil {
		c.Context = context.Background()
	}
}

// vethDepth is the default depth of the veth runs, the one the veth
// figures of docs/benchmarks-notes.md were taken at.
const vethDepth = 16

func (c *VethConfig) logf(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "veth: "+format+"\n", args...)
	}
}

// vethOps are the RDMA operations of each LLP; "raw" is raw TCP's.
var vethOps = []string{"write", "read", "send"}

// VethFigure is one cell of a path: an operation over an LLP ("tcp" and
// "raw" for raw TCP), the median throughput of the rounds and the median
// CPU seconds per GB moved of each side's process: Passive is serve (or
// the TCP sink) in namespace A, Active bench (or the TCP source) in B.
type VethFigure struct {
	LLP, Op         string
	Gbps            float64
	Passive, Active float64
	// Samples are the rounds' throughputs.
	Samples []float64
	Err     error
}

// VethPath is one setting of the veth pair, with the offloads as
// `ethtool -k` read them back on each end.
type VethPath struct {
	MTU                int
	GRO                bool
	OffloadA, OffloadB string
	Figures            []VethFigure
}

// figure returns the path's figure of llp and op.
func (p *VethPath) figure(llp, op string) (VethFigure, bool) {
	for _, f := range p.Figures {
		if f.LLP == llp && f.Op == op {
			return f, true
		}
	}
	return VethFigure{}, false
}

// VethResults are the figures of RunVeth.
type VethResults struct {
	Config  VethConfig
	Machine Machine
	Paths   []VethPath
	Took    time.Duration
}

// errVethUnsupported reports RunVeth on a system without network
// namespaces.
var errVethUnsupported = errors.New("harness: the veth mode needs Linux network namespaces and root")

// vethGB is octets as (decimal) gigabytes.
func vethGB(octets int64) float64 { return float64(octets) / 1e9 }

// vethSamples are the rounds' figures of one path, per (LLP, op).
type vethSamples struct {
	gbps, cpuA, cpuB map[[2]string][]float64
	errs             map[[2]string]error
}

func newVethSamples() *vethSamples {
	return &vethSamples{gbps: map[[2]string][]float64{}, cpuA: map[[2]string][]float64{}, cpuB: map[[2]string][]float64{}, errs: map[[2]string]error{}}
}

// figures are the medians of s, raw TCP and raw sctp-native first, then
// each LLP's ops.
func (s *vethSamples) figures(llps []string) []VethFigure {
	keys := [][2]string{{"tcp", "raw"}, {"sctp", "raw"}}
	for _, llp := range llps {
		for _, op := range vethOps {
			keys = append(keys, [2]string{llp, op})
		}
	}
	var out []VethFigure
	for _, k := range keys {
		f := VethFigure{LLP: k[0], Op: k[1], Err: s.errs[k], Samples: s.gbps[k]}
		if f.Err == nil {
			f.Gbps, f.Passive, f.Active = median(s.gbps[k]), median(s.cpuA[k]), median(s.cpuB[k])
		}
		out = append(out, f)
	}
	return out
}
