// Command sctp-rdma serves, connects, benchmarks and demonstrates RDMA
// (RDMAP/DDP, RFC 5040/5041/7306) over SCTP (RFC 5043) and MPA/TCP:
//
//	sctp-rdma serve [flags]            passive side of bench and ping
//	sctp-rdma bench [flags] [test...]  perftest-like bandwidth and latency tests
//	sctp-rdma ping [flags]             rping-style exchange with data verification
//	sctp-rdma harness [flags]          raw LLP versus RDMA figures (make bench)
//	sctp-rdma demo [flags]             loopback demo over userspace SCTP
//
// "sctp-rdma CMD -h" lists a command's flags; docs/cli.md describes all.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/demo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: sctp-rdma <command> [flags]

commands:
  serve   serve bench and ping clients (passive side); many clients at once
  bench   measure write, read, send, fetchadd, cmpswap, write-imm: bandwidth,
          message rate and latency (perftest's columns), per stream and total
  ping    rping-style: the server reads the client's buffer, writes it back,
          the client verifies every octet
  harness measure raw LLP throughput and round trip beside RDMA Write, Read and
          Send over every LLP on loopback; writes docs/benchmarks.md
  demo    run a passive and an active endpoint on loopback over sctp-native,
          exercise every RDMA operation on several streams, break one stream on
          purpose and show the others finishing

run "sctp-rdma <command> -h" for a command's flags, "sctp-rdma --version" for the version
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runCtx(ctx, args, stdout, stderr)
}

// checkOnly makes a command return once its flags are parsed and checked,
// before it listens, connects or measures: TestDocsCommands checks that
// way the command lines of the docs that need root, a VM or many minutes.
var checkOnly atomic.Bool

// version and commit are set by the Makefile's ldflags
// (-X main.version=$(git describe --tags --always --dirty) -X main.commit=...);
// a plain go build takes both from the build information instead.
var version, commit string

// versionString names the build: its version, the commit it was built
// from (and whether the tree had changes), and the Go release.
func versionString() string {
	v, rev, dirty, goVer := version, commit, false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVer = bi.GoVersion
		if v == "" {
			v = bi.Main.Version
		}
		for _, st := range bi.Settings {
			switch {
			case st.Key == "vcs.revision" && rev == "":
				rev = st.Value
			case st.Key == "vcs.modified":
				dirty = st.Value == "true"
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	c := "commit unknown: built outside a git checkout or with -buildvcs=false"
	if rev != "" {
		c = "commit " + rev[:min(12, len(rev))]
		if dirty {
			c += ", modified"
		}
	}
	out := fmt.Sprintf("sctp-rdma %s (%s)", v, c)
	if goVer != "" {
		out += " " + goVer
	}
	return out
}

// wantsHelp reports whether args ask for a command's help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}

// runCtx runs a command under ctx (tests cancel it instead of signalling).
func runCtx(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"serve": cmdServe, "bench": cmdBench, "ping": cmdPing, "harness": cmdHarness,
	}
	// Until a command sets its own (--log-level, --json), log lines, the
	// libraries' included, go to stderr as text from warnings up.
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if wantsHelp(args[1:]) {
		// Help asked for is the output: it goes to stdout (errors about
		// the flags still go to stderr).
		stderr = stdout
	}
	if fn, ok := cmds[args[0]]; ok {
		return exitFor(stderr, args[0], fn(ctx, args[1:], stdout, stderr))
	}
	switch args[0] {
	case "demo":
		return cmdDemo(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, versionString())
		return 0
	}
	fmt.Fprintf(stderr, "sctp-rdma: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nStreams := fs.Int("streams", 8, "number of DDP streams (SCTP stream pairs) to open")
	size := fs.String("size", "256K", "largest message size (K/M suffixes); streams use size, size/2, size/4, size/8")
	breakIdx := fs.Int("break", 2, "index (0-based, below --streams) of the stream to break with a protocol error (-1: none)")
	timeout := fs.Duration("timeout", 60*time.Second, "time limit for the whole demo")
	llpName := fs.String("llp", "sctp-native", "lower layer: sctp-native or sctp-pion (the demo runs on userspace SCTP)")
	pcapPath := fs.String("pcap", "", "write every packet of the demo (the active side's view) to a pcapng file")
	if _, err := parseInterleaved(fs, args); err != nil || fs.NArg() > 0 {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err == nil {
			err = usageError("unexpected argument %q", fs.Arg(0))
		}
		return exitFor(stderr, "demo", err)
	}
	if *llpName != "sctp-pion" && *llpName != "sctp-native" {
		fmt.Fprintf(stderr, "sctp-rdma demo: --llp %q: the demo runs over userspace SCTP (sctp-native or sctp-pion) only\n", *llpName)
		return 2
	}
	sz, err := parseSize(*size)
	if err == nil && sz == 0 {
		err = errors.New("sizes must be at least 1 octet")
	}
	if err != nil {
		fmt.Fprintf(stderr, "sctp-rdma demo: --size: %v\n", err)
		return 2
	}
	if *nStreams < 1 || *nStreams > 1024 {
		fmt.Fprintf(stderr, "sctp-rdma demo: --streams must be 1..1024\n")
		return 2
	}
	if *breakIdx < -1 || *breakIdx >= *nStreams {
		fmt.Fprintf(stderr, "sctp-rdma demo: --break %d: want a stream index 0..%d (below --streams %d), or -1 for none\n", *breakIdx, *nStreams-1, *nStreams)
		return 2
	}
	if checkOnly.Load() {
		return 0
	}
	capw, stopCapture, err := startCapture(*pcapPath, 0, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sctp-rdma demo: %v\n", err)
		return 1
	}
	defer stopCapture()
	stack := demo.StackNative
	if *llpName == "sctp-pion" {
		stack = demo.StackPion
	}
	cfg := demo.Config{Streams: *nStreams, Size: sz, Break: *breakIdx, NoBreak: *breakIdx < 0, Timeout: *timeout, Capture: capw, Stack: stack}
	rep, err := demo.Run(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "sctp-rdma demo: %v\n", err)
		return 1
	}
	if rep.OK() != nil {
		return 1
	}
	return 0
}
