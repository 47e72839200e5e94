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
	"github.com/sctp-rdma/sctp-rdma/internal/tools/metrics"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// defaultPort is the port serve listens on and bench/ping connect to when
// none is given (perftest's).
const defaultPort = "18515"

// withPort appends the default port to a bare host.
func withPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, defaultPort)
}

// syncWriter serialises writes from the server's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// resultPrinter prints one row per client test the server served (the
// header before the first), or a JSON "result" event per test.
func resultPrinter(w io.Writer, asJSON bool) func(bench.RunResult) {
	var once sync.Once
	return func(r bench.RunResult) {
		mode := "bw"
		if r.Latency {
			mode = "lat"
		}
		if asJSON {
			_ = json.NewEncoder(w).Encode(map[string]any{"event": "result", "client": r.Client.String(), "test": r.Test.String(),
				"mode": mode, "size": r.Size, "streams": r.Streams, "reverse": r.Reverse, "failed": r.Failed,
				"ops": r.Ops, "bytes": r.Bytes, "elapsed_s": r.Elapsed.Seconds(), "gbps": r.Gbps(), "msg_rate": r.MsgRate()})
			return
		}
		once.Do(func() {
			fmt.Fprintf(w, " %-16s %-10s %-4s %-10s %-8s %-11s %-18s %-13s %s\n", "client", "test", "mode", "#bytes", "streams",
				"#iterations", "BW average[Gb/sec]", "MsgRate[Mpps]", "result")
		})
		streams := fmt.Sprint(r.Streams)
		if r.Reverse > 0 {
			streams = fmt.Sprintf("%d+%d", r.Streams-r.Reverse, r.Reverse) // forward + reverse (bidirectional)
		}
		result := "ok"
		if r.Failed > 0 {
			result = fmt.Sprintf("%d of %d streams failed", r.Failed, r.Streams)
		}
		fmt.Fprintf(w, " %-16s %-10s %-4s %-10d %-8s %-11d %-18.3f %-13.6f %s\n", r.Client, r.Test, mode, r.Size, streams,
			r.Ops, r.Gbps(), r.MsgRate()/1e6, result)
	}
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf llpFlags
	lf.register(fs)
	listen := fs.String("listen", ":"+defaultPort, "address to listen on (UDP for sctp-pion, SCTP for sctp-kernel, TCP for mpa)")
	maxSize := fs.String("max-size", "64M", "largest message size a client may request")
	maxStreams := fs.Int("max-streams", 4096, "most streams served at once over all clients; further requests are rejected")
	streamReserve := fs.Int("stream-reserve", bench.DefaultStreamReserve, "stream slots one client (peer address) cannot take, kept for other clients (at most --max-streams/4)")
	maxMemory := fs.String("max-memory", "1G", "most buffer memory reserved for all streams together; a test that does not fit is refused before anything is allocated")
	setupTimeout := fs.Duration("setup-timeout", bench.DefaultSetupTimeout, "how long an accepted stream may stay silent before its Setup; then it is ended and its slot freed")
	jsonOut := fs.Bool("json", false, "print the listening address and the final summary as JSON lines")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics (text format) on http://ADDR/metrics while running, e.g. 127.0.0.1:9464")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := lf.startLogging(stderr, *jsonOut); err != nil {
		return err
	}
	o, err := lf.options()
	if err == nil {
		err = lf.secureOptions(&o, true, "")
	}
	if err != nil {
		return err
	}
	ms, err := parseSize(*maxSize)
	if err != nil || ms < 8 {
		return usageError("--max-size %q: want a size of at least 8 octets", *maxSize)
	}
	if *maxStreams < 1 {
		return usageError("--max-streams must be at least 1")
	}
	mm, err := parseSize(*maxMemory)
	if err != nil || mm < ms {
		return usageError("--max-memory %q: want a size of at least --max-size (%d)", *maxMemory, ms)
	}
	if *streamReserve < 0 {
		return usageError("--stream-reserve must be 0 or more")
	}
	if *streamReserve == 0 {
		*streamReserve = -1 // none
	}
	if *setupTimeout <= 0 {
		return usageError("--setup-timeout must be positive")
	}
	if checkOnly.Load() {
		return nil
	}
	stopProfile, err := startProfile(lf.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	capw, stopCapture, err := startCapture(lf.pcap, lf.pcapSnap, stderr)
	if err != nil {
		return err
	}
	defer stopCapture()
	o.Capture = capw
	tw, stopTrace, err := startTrace(lf.trace, stderr)
	if err != nil {
		return err
	}
	defer stopTrace()
	o.Trace = tw
	ln, err := transport.Listen(o, withPort(*listen))
	if err != nil {
		return err
	}
	out := &syncWriter{w: stdout}
	ctr := &bench.Counters{}
	srv := bench.NewServer(bench.ServerConfig{MaxSize: ms, MaxStreams: *maxStreams, MaxMemory: int64(mm),
		SetupTimeout: *setupTimeout, StreamReserve: max(*streamReserve, -1), Log: out, Counters: ctr,
		Results: resultPrinter(out, *jsonOut)})
	src := metrics.Source{Server: served(srv), Listener: ln}
	mctx, mstop := context.WithCancel(ctx)
	defer mstop()
	var maddr net.Addr
	if *metricsAddr != "" {
		var wait func()
		maddr, wait, err = metrics.Listen(mctx, *metricsAddr, src)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer wait()
	}
	if *jsonOut {
		ev := map[string]any{"event": "listening", "llp": ln.Stats().LLP, "addr": ln.Addr()}
		if maddr != nil {
			ev["metrics"] = "http://" + maddr.String() + "/metrics"
		}
		_ = json.NewEncoder(out).Encode(ev)
	} else {
		fmt.Fprintf(out, "sctp-rdma serve: listening on %s (%s); SIGINT or SIGTERM stops\n", ln.Addr(), ln.Stats().LLP)
		if maddr != nil {
			fmt.Fprintf(out, "sctp-rdma serve: metrics on http://%s/metrics\n", maddr)
		}
	}
	start := time.Now()
	err = srv.Run(ctx, ln)
	ops, octets := ctr.Ops.Load(), ctr.Bytes.Load()
	snap := metrics.Take(src)
	if *jsonOut {
		_ = json.NewEncoder(out).Encode(map[string]any{"event": "stopped", "operations": ops, "bytes": octets, "uptime_s": time.Since(start).Seconds(),
			"counters": snap})
	} else {
		fmt.Fprintf(out, "sctp-rdma serve: stopped after %v: %d two-sided operations completed by the server (%d octets); one-sided ones below\n",
			time.Since(start).Round(time.Millisecond), ops, octets)
		metrics.WriteText(out, "sctp-rdma serve: ", snap)
	}
	return err
}

// served reads srv's counters for package metrics, which knows no bench
// type.
func served(srv *bench.Server) func() metrics.Served {
	return func() metrics.Served {
		st, tot := srv.Stats(), srv.Totals()
		m := metrics.Served{Active: st.Active, Reserved: st.Reserved, MaxMemory: st.MaxMemory,
			Admitted: st.Admitted, RefusedBusy: st.RefusedBusy, RefusedNotBench: st.RefusedNotBench,
			RefusedMemory: st.RefusedMemory, RefusedShare: st.RefusedShare, SetupTimeouts: st.SetupTimeouts,
			Finished: tot.Finished, Totals: tot.Stats}
		for _, tc := range tot.Terminates {
			m.Terminates = append(m.Terminates, metrics.ServedTerminate{Code: tc.Code, Sent: tc.Sent, Received: tc.Received})
		}
		for _, ps := range srv.Streams() {
			m.Streams = append(m.Streams, metrics.ServedStream{LLP: ps.LLP, Peer: ps.Peer, StreamID: ps.StreamID, Test: ps.Test, Stats: ps.Stats})
		}
		return m
	}
}
