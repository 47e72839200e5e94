package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/ccname"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/internal/tools/harness"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

func cmdHarness(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && harness.TCPChildModes[args[0]] {
		// The raw TCP side of a veth run (hidden: harness --veth starts it).
		return harness.TCPChild(ctx, args, stdout)
	}
	fs := flag.NewFlagSet("harness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the Markdown report to this file (default: standard output)")
	llps := fs.String("llp", "sctp-pion,sctp-native,mpa", "lower layers to measure, comma separated")
	size := fs.String("size", "64K", "bulk message size")
	volume := fs.String("bytes", "64M", "octets per throughput measurement")
	runs := fs.Int("runs", 3, "repetitions; the median is reported")
	streams := fs.Int("streams", 256, "stream count of the multistream measurement")
	iters := fs.Int("ping-iters", 2000, "round trips of the ping-pong measurements")
	depth := fs.Int("depth", harness.DefaultDepth, fmt.Sprintf("operations in flight per stream of the single-stream throughput measurements (Reads: the client's ORD; the servers offer IRD %d)", harness.ServerIRD))
	plots := fs.String("plots", "", "directory for the PNG plots (default: img beside --out; none without --out)")
	noSweep := fs.Bool("no-sweep", false, "skip the size and stream-count sweeps (no plots)")
	noSecure := fs.Bool("no-secure", false, "skip the secure modes (sctp-native over DTLS, mpa over TLS) against the clear")
	wan := fs.Bool("wan", false, "measure over emulated wide-area paths between two network namespaces instead (root); with --out, replace the WAN section of that page")
	wanRTTs := fs.String("wan-rtts", "1ms,10ms,50ms,100ms", "round trips of the WAN grid")
	wanLosses := fs.String("wan-losses", "0,0.01,0.1,1", "loss rates of the WAN grid, per cent per direction")
	wanRate := fs.String("wan-rate", "100M", "bottleneck rate of the WAN paths, bits per second")
	wanDur := fs.Duration("wan-duration", 3*time.Second, "each WAN throughput measurement (at least 100 round trips)")
	wanFair := fs.Duration("wan-fair-duration", 30*time.Second, "each run of two flows sharing the WAN bottleneck")
	wanCC := fs.String("wan-tcp-cc", harness.DefaultWANTCP, "congestion control of every TCP socket of the WAN runs (raw TCP and MPA; one the kernel has, e.g. cubic, reno, bbr)")
	wanSCTPCC := fs.String("wan-sctp-cc", "", "congestion control of sctp-native in the WAN runs: rfc9260 or cubic (default the stack's default for DDP)")
	wanTargetRuns := fs.Int("wan-target-runs", 9, "paired runs of raw sctp-native, RDMA Write and RDMA Read on the target path (50 ms, 0.1% loss) of the WAN mode; 0: none")
	wanTargetDur := fs.Duration("wan-target-duration", 30*time.Second, "each measurement of the WAN target runs")
	wanHOL := fs.Duration("wan-hol-duration", 20*time.Second, "each head-of-line blocking run of the WAN mode")
	wanBackend := fs.String("wan-backend", "", `link emulation: "tun" (userspace), "netem" (the kernel's), or "" for the kernel's where it exists`)
	veth := fs.Bool("veth", false, "measure RDMA Write, Read and Send per LLP and raw TCP between two network namespaces joined by a veth pair, each side a process of its own, with CPU seconds per GB (root); with --out, replace the veth section of that page")
	vethMTUs := fs.String("veth-mtus", "1500,9000", "MTUs of the veth pair")
	vethGRO := fs.String("veth-gro", "on,off", "GRO settings of both veth ends, set with ethtool: on, off or both")
	vethDur := fs.Duration("veth-duration", 3*time.Second, "each veth measurement")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *veth {
		return cmdHarnessVeth(ctx, fs, *runs, *llps, *vethMTUs, *vethGRO, *vethDur, *out, stdout, stderr)
	}
	if *wan {
		wcfg := harness.WANConfig{Runs: *runs, Duration: *wanDur, Backend: *wanBackend, TCPCongestion: *wanCC, SCTPCongestion: *wanSCTPCC,
			FairDuration: *wanFair, HOLDuration: *wanHOL, TargetRuns: *wanTargetRuns, TargetDuration: *wanTargetDur, Progress: stderr}
		if *wanTargetRuns == 0 {
			wcfg.TargetRuns = -1
		}
		if *wanSCTPCC != "" && *wanSCTPCC != ccname.CongestionRFC9260 && *wanSCTPCC != ccname.CongestionCUBIC {
			return usageError("--wan-sctp-cc %q: want %s or %s", *wanSCTPCC, ccname.CongestionRFC9260, ccname.CongestionCUBIC)
		}
		if *runs == 3 && !flagSet(fs, "runs") {
			wcfg.Runs = 1
		}
		for _, f := range strings.Split(*wanRTTs, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil || d <= 0 {
				return usageError("--wan-rtts %q: want durations such as 10ms", *wanRTTs)
			}
			wcfg.RTTs = append(wcfg.RTTs, d)
		}
		for _, f := range strings.Split(*wanLosses, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || v < 0 || v >= 100 {
				return usageError("--wan-losses %q: want per cent values below 100", *wanLosses)
			}
			wcfg.Losses = append(wcfg.Losses, v/100)
		}
		rate, err := parseRate(*wanRate)
		if err != nil {
			return usageError("--wan-rate %q: %v", *wanRate, err)
		}
		wcfg.Rate = rate
		if flagSet(fs, "llp") {
			for _, l := range strings.Split(*llps, ",") {
				switch l {
				case transport.SCTPKernel:
					if err := kernel.Available(); err != nil {
						return usageError("--llp sctp-kernel: %v (make wan-kernel-docs measures kernel SCTP in the qemu VM)", err)
					}
					wcfg.LLPs = append(wcfg.LLPs, l)
				case transport.SCTPPion, transport.SCTPNative, transport.MPA:
					wcfg.LLPs = append(wcfg.LLPs, l)
				default:
					return usageError("--llp %q: the WAN mode measures sctp-native, sctp-pion, sctp-kernel (on a kernel with SCTP) and mpa", l)
				}
			}
		}
		if checkOnly.Load() {
			return nil
		}
		return runWAN(wcfg, *out, *plots, stdout)
	}
	sz, err := parseSize(*size)
	if err != nil || sz < 1 {
		return usageError("--size %q: want a positive size", *size)
	}
	vol, err := parseSize(*volume)
	if err != nil || vol < sz {
		return usageError("--bytes %q: want a size of at least --size", *volume)
	}
	if *runs < 1 || *streams < 1 || *iters < 1 {
		return usageError("--runs, --streams and --ping-iters must be positive")
	}
	if *depth < 1 || *depth > bench.MaxDepth {
		return usageError("--depth %d: want 1..%d", *depth, bench.MaxDepth)
	}
	cfg := harness.Config{Size: sz, Bytes: int64(vol), Runs: *runs, ManyStreams: *streams, PingIters: *iters, Depth: *depth, Progress: stderr, NoSweep: *noSweep, NoSecure: *noSecure,
		Server: serveProcess}
	for _, l := range strings.Split(*llps, ",") {
		switch l {
		case transport.SCTPPion, transport.SCTPNative, transport.MPA, transport.SCTPKernel:
			cfg.LLPs = append(cfg.LLPs, l)
		default:
			return usageError("--llp %q: want sctp-pion, sctp-native, sctp-kernel or mpa", l)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if checkOnly.Load() {
		return nil
	}
	res := harness.Run(cfg)
	dir := *plots
	if dir == "" && *out != "" {
		dir = filepath.Join(filepath.Dir(*out), "img")
	}
	if dir != "" && !*noSweep {
		rel := dir
		if *out != "" {
			if r, err := filepath.Rel(filepath.Dir(*out), dir); err == nil {
				rel = r
			}
		}
		if err := res.WritePlots(dir, filepath.ToSlash(rel)); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "sctp-rdma harness: %d plots in %s\n", len(res.Plots), dir)
	}
	var buf bytes.Buffer
	res.Markdown(&buf)
	if *out == "" {
		_, err = stdout.Write(buf.Bytes())
		return err
	}
	// The WAN section comes from its own run (--wan): kept as it is.
	if old, err := os.ReadFile(*out); err == nil {
		for _, m := range []harness.Marks{harness.WANMarks, harness.WANKernelMarks, harness.VethMarks} {
			if sec := m.Section(old); sec != nil {
				buf = *bytes.NewBuffer(m.Splice(buf.Bytes(), sec))
			}
		}
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sctp-rdma harness: wrote %s\n", *out)
	return nil
}

// cmdHarnessVeth checks the flags of harness --veth, runs it and writes
// its section: into the page out (replacing the section there), or to
// stdout.
func cmdHarnessVeth(ctx context.Context, fs *flag.FlagSet, runs int, llps, mtus, gro string, d time.Duration, out string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := harness.VethConfig{Exe: exe, Runs: runs, Duration: d, Progress: stderr, Context: ctx}
	if runs < 1 {
		return usageError("--runs must be positive")
	}
	if d < 10*time.Millisecond {
		return usageError("--veth-duration %v: want at least 10ms", d)
	}
	for _, f := range strings.Split(mtus, ",") {
		m, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || m < 1280 || m > 65535 {
			return usageError("--veth-mtus %q: want MTUs from 1280 to 65535", mtus)
		}
		cfg.MTUs = append(cfg.MTUs, m)
	}
	for _, f := range strings.Split(gro, ",") {
		switch strings.TrimSpace(f) {
		case "on":
			cfg.GRO = append(cfg.GRO, true)
		case "off":
			cfg.GRO = append(cfg.GRO, false)
		default:
			return usageError("--veth-gro %q: want on, off or both", gro)
		}
	}
	if flagSet(fs, "llp") {
		for _, l := range strings.Split(llps, ",") {
			switch l {
			case transport.SCTPNative, transport.SCTPPion, transport.MPA:
				cfg.LLPs = append(cfg.LLPs, l)
			default:
				return usageError("--llp %q: the veth mode measures sctp-native, sctp-pion and mpa", l)
			}
		}
	}
	if checkOnly.Load() {
		return nil
	}
	res, err := harness.RunVeth(cfg)
	if err != nil {
		return err
	}
	var sec bytes.Buffer
	res.Markdown(&sec)
	if out == "" {
		_, err := stdout.Write(sec.Bytes())
		return err
	}
	page, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.WriteFile(out, harness.VethMarks.Splice(page, sec.Bytes()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sctp-rdma harness: wrote the veth section of %s\n", out)
	return nil
}

// runWAN runs the WAN grid and writes its section: into the page out
// (replacing the section there), or to stdout.
func runWAN(cfg harness.WANConfig, out, plots string, stdout io.Writer) error {
	res, err := harness.RunWAN(cfg)
	if err != nil {
		return err
	}
	var ps []harness.Plot
	if out != "" {
		dir := plots
		if dir == "" {
			dir = filepath.Join(filepath.Dir(out), "img")
		}
		rel, err := filepath.Rel(filepath.Dir(out), dir)
		if err != nil {
			rel = dir
		}
		if ps, err = res.WritePlots(dir, filepath.ToSlash(rel)); err != nil {
			return err
		}
	}
	var sec bytes.Buffer
	res.Markdown(&sec, ps)
	if out == "" {
		_, err := stdout.Write(sec.Bytes())
		return err
	}
	page, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.WriteFile(out, res.Marks().Splice(page, sec.Bytes()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sctp-rdma harness: wrote the WAN section of %s\n", out)
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseRate parses a rate in bits per second with an optional decimal
// suffix (k, M, G as tc writes them: 100M is 100,000,000; "bit" and
// "bps" may follow).
func parseRate(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "bit"), "bps")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"), strings.HasSuffix(t, "K"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1e9, t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v*mult < 1000 || v*mult > 100e9 {
		return 0, errors.New("want a rate from 1k to 100G bits per second, such as 100M")
	}
	return int64(v * mult), nil
}

// serveProcess starts "sctp-rdma serve" (this executable) for llp on a
// free loopback port, for the harness's multistream figures
// (harness.Config.Server), and returns its address and a function that
// stops it.
func serveProcess(llp string) (addr string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(exe, "serve", "--json", "--llp", llp, "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	got := make(chan string, 1)
	go func() {
		dec := json.NewDecoder(out)
		var ev struct{ Event, Addr string }
		for dec.Decode(&ev) == nil {
			if ev.Event == "listening" {
				got <- ev.Addr
				break
			}
		}
		close(got)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case a, ok := <-got:
		if ok && a != "" {
			return a, stop, nil
		}
	case <-time.After(30 * time.Second):
	}
	stop()
	return "", nil, fmt.Errorf("%s serve --llp %s did not say where it listens: %s", exe, llp, strings.TrimSpace(errBuf.String()))
}
