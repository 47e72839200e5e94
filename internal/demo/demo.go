package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// Config configures a demo run.
type Config struct {
	// Streams is the number of DDP streams to open (default 8).
	Streams int
	// Size is the largest message size; stream i uses Size >> (i % 4)
	// (default 256 KiB).
	Size int
	// Break is the index (0-based) of the stream to break with a protocol
	// error; negative for none. Default 2 when Streams > 2.
	Break int
	// NoBreak disables breaking a stream.
	NoBreak bool
	// Timeout bounds the whole run (default 60 s).
	Timeout time.Duration
	// Addr is the UDP address the passive side listens on (default
	// 127.0.0.1:0).
	Addr string
}

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
	if c.NoBreak {
		c.Break = -1
	} else if c.Break == 0 && c.Streams > 2 {
		c.Break = 2
	}
	if c.Break >= c.Streams {
		c.Break = -1
	}
}

// Report is the outcome of a demo run.
type Report struct {
	Streams []StreamResult
	// ServerErrs are the passive side's verdicts per stream (nil: verified).
	ServerErrs map[uint16]error
	// AssociationClosed reports that the association shut down after every
	// stream was closed or erroneous (RFC 5040 §7).
	AssociationClosed bool
	MULPDU            int
	Elapsed           time.Duration
}

// OK reports whether the demo behaved as intended: every intact stream
// verified on both sides, the broken one terminated with the right code.
func (r *Report) OK() error {
	var errs []error
	for _, s := range r.Streams {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("stream %d: %w", s.ID, s.Err))
		}
		if !s.Broken {
			if err := r.ServerErrs[s.ID]; err != nil {
				errs = append(errs, fmt.Errorf("stream %d (passive side): %w", s.ID, err))
			}
		}
	}
	if !r.AssociationClosed {
		errs = append(errs, errors.New("association did not shut down after the last stream"))
	}
	return errors.Join(errs...)
}

// Run executes the demo and returns its report; the report is also
// written to out (if not nil) in a readable form.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Report, error) {
	cfg.defaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start := time.Now()

	lcfg := sctpllp.Config{}
	ln, err := sctpllp.Listen(cfg.Addr, lcfg)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()

	dev := rdmap.NewDevice(rdmap.DeviceOptions{})
	serverPD, clientPD := dev.AllocPD(), dev.AllocPD()
	rep := &Report{ServerErrs: make(map[uint16]error)}
	sizeOf := func(i int) int { return max(cfg.Size>>(i%4), 1) }

	// Passive side.
	var srvWG sync.WaitGroup
	var srvMu sync.Mutex
	srvAssoc := make(chan *sctpllp.Association, 1)
	srvWG.Add(1)
	go func() {
		defer srvWG.Done()
		a, err := ln.Accept(ctx)
		if err != nil {
			srvMu.Lock()
			rep.ServerErrs[0xFFFF] = err
			srvMu.Unlock()
			return
		}
		srvAssoc <- a
		m := streams.New(a, serverPD, streams.Config{})
		for i := 0; i < cfg.Streams; i++ {
			in, err := m.Accept(ctx)
			if err != nil {
				srvMu.Lock()
				rep.ServerErrs[0xFFFF] = err
				srvMu.Unlock()
				return
			}
			s, err := in.Accept(nil)
			if err != nil {
				srvMu.Lock()
				rep.ServerErrs[in.StreamID()] = err
				srvMu.Unlock()
				continue
			}
			srvWG.Add(1)
			go func() {
				defer srvWG.Done()
				err := serveStream(ctx, serverPD, s, sizeOf(int(s.ID())-1))
				if err != nil {
					_ = s.Endpoint().Abort()
				}
				<-s.Done()
				srvMu.Lock()
				rep.ServerErrs[s.ID()] = err
				srvMu.Unlock()
			}()
		}
		m.Wait()
	}()

	// Active side.
	ca, err := sctpllp.Dial(ctx, ln.Addr(), lcfg)
	if err != nil {
		cancel()
		srvWG.Wait()
		return nil, fmt.Errorf("dial: %w", err)
	}
	rep.MULPDU = ca.MULPDU()
	cm := streams.New(ca, clientPD, streams.Config{})
	results := make([]StreamResult, cfg.Streams)
	var wg sync.WaitGroup
	for i := 0; i < cfg.Streams; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res := &results[i]
			res.ID, res.Size, res.Broken = uint16(i+1), sizeOf(i), i == cfg.Break
			t0 := time.Now()
			adv := make([]byte, advertLen)
			s, err := cm.Open(ctx, res.ID, streams.OpenOptions{
				PrivateData: []byte(fmt.Sprintf("demo stream %d", res.ID)),
				Prepare:     prepareAdvert(adv),
			})
			if err != nil {
				res.Err = err
				return
			}
			res.Err = runStream(ctx, clientPD, s, adv, res, res.Broken)
			if res.Err != nil {
				_ = s.Endpoint().Abort() // flushes everything, tells the peer
			}
			<-s.Done()
			res.Erroneous = s.Erroneous()
			res.Elapsed = time.Since(t0)
		}(i)
	}
	wg.Wait()
	cm.Wait()

	// RFC 5040 §7: with every stream closed or erroneous the association
	// shuts down by itself.
	select {
	case <-ca.Done():
		rep.AssociationClosed = true
	case <-time.After(10 * time.Second):
		_ = ca.Abort()
	}
	srvWG.Wait()
	select {
	case a := <-srvAssoc:
		select {
		case <-a.Done():
		case <-time.After(10 * time.Second):
			_ = a.Abort()
		}
	default:
	}
	rep.Streams = results
	rep.Elapsed = time.Since(start)
	if out != nil {
		rep.Print(out)
	}
	return rep, nil
}

// Print writes the report as a table and a verdict.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "sctp-rdma demo: RDMAP/DDP over userspace SCTP (pion) on loopback, MULPDU %d\n\n", r.MULPDU)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "stream\tsize\tops\tbytes\ttime\tresult")
	rs := append([]StreamResult(nil), r.Streams...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	for _, s := range rs {
		verdict := "ok: write, read-back, send, 3×fetch-add, cmp-swap, write+imm, read verified"
		switch {
		case s.Broken && s.Err == nil && s.Terminate != nil:
			verdict = fmt.Sprintf("broken on purpose: peer sent Terminate %v; stream labelled erroneous=%v", s.Terminate.Code, s.Erroneous)
		case s.Err != nil:
			verdict = "FAILED: " + s.Err.Error()
		case r.ServerErrs[s.ID] != nil:
			verdict = "FAILED at passive side: " + r.ServerErrs[s.ID].Error()
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%v\t%s\n", s.ID, s.Size, s.Ops, s.Bytes, s.Elapsed.Round(time.Millisecond), verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nassociation shut down after the last stream: %v\n", r.AssociationClosed)
	if err := r.OK(); err != nil {
		fmt.Fprintf(w, "RESULT: FAIL\n%v\n", err)
	} else {
		fmt.Fprintf(w, "RESULT: PASS (%d streams, %v)\n", len(r.Streams), r.Elapsed.Round(time.Millisecond))
	}
}
