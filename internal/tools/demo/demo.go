// Package demo runs the loopback demonstration of sctp-rdma: a passive
// and an active endpoint over one userspace SCTP association, many DDP
// streams running every RDMA operation concurrently with byte-for-byte
// verification at both ends, and one stream deliberately broken by a
// protocol error while the others finish. The work itself is
// internal/tools/workload; this package sets it up and prints the report of
// `sctp-rdma demo`.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sctp-rdma/sctp-rdma/capture"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/workload"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// Config configures a demo run.
type Config struct {
	// Streams is the number of DDP streams to open (default 8).
	Streams int
	// Size is the largest message size; stream i uses Size >> (i % 4)
	// (default 256 KiB).
	Size int
	// Break is the index (0-based, below Streams) of the stream to break
	// with a protocol error; negative for none. Run refuses an index
	// beyond the streams rather than break nothing.
	Break int
	// NoBreak disables breaking a stream.
	NoBreak bool
	// Timeout bounds the whole run (default 60 s).
	Timeout time.Duration
	// Addr is the UDP address the passive side listens on (default
	// 127.0.0.1:0).
	Addr string
	// Capture, if not nil, records every packet of the association as
	// the active side sends and receives it.
	Capture *capture.Writer
	// Stack is the userspace SCTP stack: StackNative (the default) or
	// StackPion.
	Stack string
}

// Userspace SCTP stacks of Config.Stack.
const (
	StackNative = "native"
	StackPion   = "pion"
)

func (c *Config) defaults() {
	if c.Streams <= 0 {
		c.Streams = 8
	}
	if c.Size <= 0 {
		c.Size = 256 << 10
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.NoBreak || c.Break < 0 {
		c.Break = -1
	}
}

// sizeOf is the message size of stream id (IDs start at 1).
func (c *Config) sizeOf(id uint16) int { return max(c.Size>>((int(id)-1)%4), 1) }

// Report is the outcome of a demo run: the workload's result (Streams
// holds each stream's, by ID) and whether the association shut down.
type Report struct {
	workload.Result
	// AssociationClosed reports that the association shut down gracefully
	// on both sides after every stream was closed or erroneous
	// (RFC 5040 §7).
	AssociationClosed bool
	// Stack is the userspace SCTP stack the demo ran on.
	Stack string
}

// OK reports whether the demo behaved as intended: every intact stream
// verified on both sides, the broken one terminated with the right code at
// both ends, the association shut down.
func (r *Report) OK() error {
	errs := r.Errs()
	if !r.AssociationClosed {
		errs = append(errs, errors.New("association did not shut down after the last stream"))
	}
	return errors.Join(errs...)
}

// Run executes the demo and returns its report; the report is also
// written to out (if not nil) in a readable form.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Report, error) {
	cfg.defaults()
	if cfg.Break >= cfg.Streams {
		return nil, fmt.Errorf("demo: break stream %d of %d: the index must be below the number of streams", cfg.Break, cfg.Streams)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start := time.Now()
	// Every stream opens at once: the passive side lets as many Initiates
	// wait for its ULP (RFC 5043 §6.4: beyond the limit an Initiate is
	// answered with a Session Terminate).
	acfg := sctpllp.Config{MaxPendingInitiates: max(cfg.Streams, sctpllp.DefaultMaxPendingInitiates)}
	var listen backend.Stack
	if cfg.Stack == "" {
		cfg.Stack = StackNative
	}
	switch cfg.Stack {
	case StackPion:
		acfg.Stack, listen = pion.Stack(pion.Config{Capture: cfg.Capture}), pion.Stack(pion.Config{})
	case StackNative:
		var ncfg native.Config
		if cfg.Capture != nil {
			ncfg.Tap = cfg.Capture.SCTPOverUDPTap(false)
		}
		acfg.Stack, listen = native.Stack(ncfg, nil), native.Stack(native.Config{}, nil)
	default:
		return nil, fmt.Errorf("demo: unknown stack %q", cfg.Stack)
	}
	client, server, err := workload.Loopback(ctx, cfg.Addr, acfg, listen)
	if err != nil {
		return nil, err
	}
	var broken uint16
	if cfg.Break >= 0 {
		broken = uint16(cfg.Break + 1)
	}
	res, err := workload.Run(ctx, client, server, workload.Config{
		Streams: cfg.Streams,
		Sizes:   func(id uint16) (int, int) { return cfg.sizeOf(id), cfg.sizeOf(id) },
		Break:   broken,
		Name:    "demo",
	})
	if err != nil {
		_ = client.Abort()
		_ = server.Abort()
		return nil, err
	}
	rep := &Report{Result: *res, Stack: cfg.Stack}
	// RFC 5040 §7: with every stream closed or erroneous the association
	// shuts down by itself.
	cerr := workload.AwaitEnd(client, 10*time.Second)
	serr := workload.AwaitEnd(server, 10*time.Second)
	rep.AssociationClosed = cerr == nil && serr == nil
	rep.Elapsed = time.Since(start)
	if out != nil {
		rep.Print(out)
	}
	return rep, nil
}

// Print writes the report as a table and a verdict.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "sctp-rdma demo: RDMAP/DDP over userspace SCTP (%s) on loopback, MULPDU %d\n\n", r.Stack, r.MULPDU)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "stream\tsize\tops\tbytes\ttime\tresult")
	for _, s := range r.Streams {
		verdict := "ok: write, read-back, send, send+SE, send+invalidate, send+SE+invalidate, 3×fetch-add, cmp-swap, " +
			"immediate, write+imm, read counter; verified at both ends"
		switch {
		case s.Err != nil:
			verdict = "FAILED: " + s.Err.Error()
		case s.ServerErr != nil:
			verdict = "FAILED at passive side: " + s.ServerErr.Error()
		case s.Broken && s.Terminate != nil:
			verdict = fmt.Sprintf("broken on purpose: peer sent Terminate %v; stream labelled erroneous=%v", s.Terminate.Code, s.Erroneous)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%v\t%s\n", s.ID, s.Size, s.Ops, s.Octets, s.Elapsed.Round(time.Millisecond), verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nassociation shut down after the last stream: %v\n", r.AssociationClosed)
	if err := r.OK(); err != nil {
		fmt.Fprintf(w, "RESULT: FAIL\n%v\n", err)
	} else {
		fmt.Fprintf(w, "RESULT: PASS (%d streams, %v)\n", len(r.Streams), r.Elapsed.Round(time.Millisecond))
	}
}
