package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sctp-rdma/sctp-rdma/bench/harness"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

func cmdHarness(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("harness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the Markdown report to this file (default: standard output)")
	llps := fs.String("llp", "sctp-pion,sctp-native,mpa", "lower layers to measure, comma separated")
	size := fs.String("size", "64K", "bulk message size")
	volume := fs.String("bytes", "64M", "octets per throughput measurement")
	runs := fs.Int("runs", 3, "repetitions; the median is reported")
	streams := fs.Int("streams", 256, "stream count of the multistream measurement")
	iters := fs.Int("ping-iters", 2000, "round trips of the ping-pong measurements")
	plots := fs.String("plots", "", "directory for the PNG plots (default: img beside --out; none without --out)")
	noSweep := fs.Bool("no-sweep", false, "skip the size and stream-count sweeps (no plots)")
	noSecure := fs.Bool("no-secure", false, "skip the secure modes (sctp-native over DTLS, mpa over TLS) against the clear")
	if err := parseFlags(fs, args); err != nil {
		return err
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
	cfg := harness.Config{Size: sz, Bytes: int64(vol), Runs: *runs, ManyStreams: *streams, PingIters: *iters, Progress: stderr, NoSweep: *noSweep, NoSecure: *noSecure}
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
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sctp-rdma harness: wrote %s\n", *out)
	return nil
}
