package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
)

func cmdPing(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f clientFlags
	f.register(fs, "64")
	count := fs.Uint64("count", 10, "iterations per stream (0 with --duration: run for that long)")
	verbose := fs.Bool("v", true, "print one line per verified iteration")
	// rping's spellings, on the same settings.
	fs.Uint64Var(count, "C", 10, "rping -C: same as --count")
	fs.StringVar(&f.size, "S", "64", "rping -S: same as --size")
	addr := fs.String("a", "", "rping -a: the server's address (same as --connect)")
	port := fs.Int("p", 0, "rping -p: the server's port (with an address given without one)")
	_ = fs.Bool("c", false, "rping -c: accepted (ping is always the client; serve is the server)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 1:
		return usageError("unexpected arguments %q (one server address at most)", pos[1:])
	case len(pos) == 1 && f.connect != "":
		return usageError("--connect %s and %s: give one server address", f.connect, pos[0])
	case len(pos) == 1:
		f.connect = pos[0] // as rping -c -a HOST, and as bench HOST
	}
	if *addr != "" {
		if f.connect != "" {
			return usageError("-a %s and %s: give one server address", *addr, f.connect)
		}
		f.connect = *addr
	}
	if *port != 0 {
		if f.connect == "" {
			return usageError("-p %d needs the server's address (-a HOST)", *port)
		}
		if _, _, err := net.SplitHostPort(f.connect); err == nil {
			return usageError("-p %d and a port in %q: give one", *port, f.connect)
		}
		f.connect = net.JoinHostPort(f.connect, fmt.Sprint(*port))
	}
	if err := f.startLogging(stderr, f.json); err != nil {
		return err
	}
	if err := checkGiven(fs); err != nil {
		return err
	}
	countSet, itersSet := false, false
	fs.Visit(func(fl *flag.Flag) {
		countSet = countSet || fl.Name == "count" || fl.Name == "C"
		itersSet = itersSet || fl.Name == "iters"
	})
	if countSet && itersSet && *count != f.iters {
		return usageError("--count %d and --iters %d disagree: give one (they are the same setting)", *count, f.iters)
	}
	if f.iters == 0 && f.duration == 0 {
		if *count == 0 {
			return usageError("--count must be at least 1 (or give --duration)")
		}
		f.iters = *count
	}
	cfg, sizes, err := f.config()
	if err != nil {
		return err
	}
	if len(sizes) != 1 {
		return usageError("ping takes one --size")
	}
	cfg.Test, cfg.Size = bench.TestPing, sizes[0]
	if checkOnly.Load() {
		return nil
	}
	stopProfile, err := startProfile(f.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	capw, stopCapture, err := startCapture(f.pcap, f.pcapSnap, stderr)
	if err != nil {
		return err
	}
	defer stopCapture()
	cfg.Transport.Capture = capw
	tw, stopTrace, err := startTrace(f.trace, stderr)
	if err != nil {
		return err
	}
	defer stopTrace()
	cfg.Transport.Trace = tw
	var mu sync.Mutex
	if *verbose && !f.json {
		fmt.Fprintf(stdout, "PING %s over %s: %d-octet buffers, RDMA Read + Write-back, verified\n", cfg.Addr, orDefault(cfg.Transport.LLP), cfg.Size)
		cfg.OnPing = func(l bench.PingLine) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stdout, "%d octets verified: stream=%d seq=%d time=%s us\n", l.Size, l.Stream, l.Seq, fmtDur(l.RTT))
		}
	}
	res, err := bench.Run(ctx, cfg)
	if res != nil {
		if f.json {
			_ = json.NewEncoder(stdout).Encode(toJSON(res, err))
		} else {
			a := res.Forward
			fmt.Fprintf(stdout, "--- %s ping statistics ---\n%d iterations verified on %d streams in %v\nrtt min/median/p99/max = %s/%s/%s/%s us\n",
				cfg.Addr, a.Ops, a.Streams, a.Elapsed.Round(time.Millisecond), fmtDur(a.Lat.Min), fmtDur(a.Lat.Median), fmtDur(a.Lat.P99), fmtDur(a.Lat.Max))
		}
	}
	return err
}
