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

	"github.com/sctp-rdma/sctp-rdma/bench"
	"github.com/sctp-rdma/sctp-rdma/internal/transport"
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

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf llpFlags
	lf.register(fs)
	listen := fs.String("listen", ":"+defaultPort, "address to listen on (UDP for sctp-pion, SCTP for sctp-kernel, TCP for mpa)")
	maxSize := fs.String("max-size", "64M", "largest message size a client may request")
	maxStreams := fs.Int("max-streams", 4096, "most streams served at once over all clients; further requests are rejected")
	maxMemory := fs.String("max-memory", "1G", "most buffer memory reserved for all streams together; a test that does not fit is refused before anything is allocated")
	setupTimeout := fs.Duration("setup-timeout", bench.DefaultSetupTimeout, "how long an accepted stream may stay silent before its Setup; then it is ended and its slot freed")
	jsonOut := fs.Bool("json", false, "print the listening address and the final summary as JSON lines")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o, err := lf.options()
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
	if *setupTimeout <= 0 {
		return usageError("--setup-timeout must be positive")
	}
	stopProfile, err := startProfile(lf.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	ln, err := transport.Listen(o, withPort(*listen))
	if err != nil {
		return err
	}
	out := &syncWriter{w: stdout}
	ctr := &bench.Counters{}
	srv := bench.NewServer(bench.ServerConfig{MaxSize: ms, MaxStreams: *maxStreams, MaxMemory: int64(mm),
		SetupTimeout: *setupTimeout, Log: out, Counters: ctr})
	if *jsonOut {
		_ = json.NewEncoder(out).Encode(map[string]any{"event": "listening", "llp": ln.Kind(), "addr": ln.Addr()})
	} else {
		fmt.Fprintf(out, "sctp-rdma serve: listening on %s (%s); SIGINT or SIGTERM stops\n", ln.Addr(), ln.Kind())
	}
	start := time.Now()
	err = srv.Run(ctx, ln)
	ops, octets := ctr.Ops.Load(), ctr.Bytes.Load()
	st := srv.Stats()
	if *jsonOut {
		_ = json.NewEncoder(out).Encode(map[string]any{"event": "stopped", "operations": ops, "bytes": octets, "uptime_s": time.Since(start).Seconds(),
			"streams_admitted": st.Admitted, "refused_busy": st.RefusedBusy, "refused_not_bench": st.RefusedNotBench,
			"refused_memory": st.RefusedMemory, "setup_timeouts": st.SetupTimeouts})
	} else {
		fmt.Fprintf(out, "sctp-rdma serve: stopped after %v: %d operations and messages, %d octets served\n", time.Since(start).Round(time.Millisecond), ops, octets)
		fmt.Fprintf(out, "sctp-rdma serve: streams: %d admitted, %d refused busy (--max-streams), %d refused not bench, %d refused for memory (--max-memory), %d ended without Setup (--setup-timeout)\n",
			st.Admitted, st.RefusedBusy, st.RefusedNotBench, st.RefusedMemory, st.SetupTimeouts)
	}
	return err
}
