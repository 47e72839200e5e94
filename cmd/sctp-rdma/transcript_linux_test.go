//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
)

// updateDocsEnv, set to 1, makes TestTranscripts write its transcript into
// docs/cli.md instead of checking the one there.
const updateDocsEnv = "SCTP_RDMA_UPDATE_DOCS"

const (
	transcriptBegin = "<!-- transcript: begin (written by TestTranscripts; SCTP_RDMA_UPDATE_DOCS=1 go test -run TestTranscripts ./cmd/sctp-rdma) -->"
	transcriptEnd   = "<!-- transcript: end -->"
)

// TestTranscripts runs the built binary through the cases a new user meets
// (issue 19): a peer that freezes or is stopped mid-run over each kind of
// LLP, Ctrl-C, a port where nothing listens, a server of another LLP, bad
// sizes and settings. Each case asserts its exit status, a bound on how long it
// took and its first line on stderr; together they are the transcript in
// assocFigures are the figures of a stalled SCTP run's line that vary from
// run to run (bench's assocNote); the transcript shows assocPlaceholders.
var assocFigures = regexp.MustCompile(`\d+ DATA chunks retransmitted, SRTT [0-9.]+[µm]?s, \d+ octets held`)

const assocPlaceholders = "N DATA chunks retransmitted, SRTT T, N octets held"

// docs/cli.md, which this test keeps exact (addresses normalised).
func TestTranscripts(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier only (make test): needs a build of the CLI and 15 s of runs")
	}
	bin := filepath.Join(t.TempDir(), "sctp-rdma")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	type server struct {
		cmd  *exec.Cmd
		addr string
	}
	startServe := func(llp string) server {
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--llp", llp)
		return server{cmd, startServer(t, cmd)}
	}
	// A port where nothing listens, over UDP and TCP alike.
	closedPort := func() string {
		l, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.LocalAddr().String()
		require.NoError(t, l.Close())
		return addr
	}

	var doc strings.Builder
	norm := strings.NewReplacer()
	step := func(title string, within time.Duration, wantExit int, wantFirst string, during func(*exec.Cmd), args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		start := time.Now()
		require.NoError(t, cmd.Start())
		if during != nil {
			during(cmd)
		}
		_ = cmd.Wait()
		took := time.Since(start)
		code := cmd.ProcessState.ExitCode()
		stderr := assocFigures.ReplaceAllString(norm.Replace(se.String()), assocPlaceholders)
		first, _, _ := strings.Cut(stderr, "\n")
		assert.Equal(t, wantExit, code, "%s: exit status; stderr:\n%s", title, se.String())
		assert.Less(t, took, within, "%s: took %v", title, took)
		assert.Equal(t, wantFirst, first, "%s: first line on stderr", title)
		fmt.Fprintf(&doc, "%s (exit status %d, ends within %v):\n\n```\n$ sctp-rdma %s\n", title, wantExit, within,
			norm.Replace(strings.Join(args, " ")))
		if tail := lastLine(so.String()); strings.HasPrefix(tail, " (partial") {
			fmt.Fprintf(&doc, "...\n%s\n", tail) // the table's numbers vary; its last line does not
		}
		fmt.Fprintf(&doc, "%s```\n\n", stderr)
	}

	for _, llp := range []string{"mpa", "sctp-native"} {
		srv := startServe(llp)
		norm = strings.NewReplacer(srv.addr, "127.0.0.1:18515")
		stall, note := stallTimeout(0, llp), ""
		if llp != "mpa" {
			note = "; this end's SCTP association: " + assocPlaceholders
		}
		step("A server frozen (SIGSTOP) 1 s into a 4 s run, --llp "+llp, 4*time.Second+stall+2*time.Second, 1,
			fmt.Sprintf("sctp-rdma bench: peer unresponsive for %v (no operation completed)%s, in write 64K: stream 1", stall, note),
			func(*exec.Cmd) {
				time.Sleep(time.Second)
				require.NoError(t, srv.cmd.Process.Signal(syscall.SIGSTOP))
			},
			"bench", "--llp", llp, "--duration", "4s", srv.addr, "write")
		_ = srv.cmd.Process.Signal(syscall.SIGCONT)
	}
	for _, llp := range []string{"mpa", "sctp-native"} {
		srv := startServe(llp)
		norm = strings.NewReplacer(srv.addr, "127.0.0.1:18515")
		step("A server stopped (SIGTERM) 1 s into a 4 s run, --llp "+llp, 4*time.Second, 1,
			"sctp-rdma bench: the server ended the run, in write 64K",
			func(*exec.Cmd) {
				time.Sleep(time.Second)
				require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
			},
			"bench", "--llp", llp, "--duration", "4s", srv.addr, "write")
	}

	srv := startServe("sctp-native")
	mpaSrv := startServe("mpa")
	closed := closedPort()
	norm = strings.NewReplacer(srv.addr, "127.0.0.1:18515", mpaSrv.addr, "127.0.0.1:18516", closed, "127.0.0.1:18599")
	step("Ctrl-C (SIGINT) 1.5 s into a 10 s run", 4*time.Second, 130, "sctp-rdma bench: interrupted",
		func(c *exec.Cmd) {
			time.Sleep(1500 * time.Millisecond)
			require.NoError(t, c.Process.Signal(os.Interrupt))
		},
		"bench", "--duration", "10s", srv.addr, "write")
	step("Nothing listens on the port, sctp-native", 4*time.Second, 1,
		"sctp-rdma bench: nothing listens on 127.0.0.1:18599 for --llp sctp-native (SCTP over UDP: ICMP port unreachable)",
		nil, "bench", closed)
	step("Nothing listens on the port, mpa", 4*time.Second, 1,
		"sctp-rdma bench: nothing listens on 127.0.0.1:18599 for --llp mpa (TCP connection refused)",
		nil, "bench", "--llp", "mpa", closed)
	step("The port serves another LLP: an mpa server, an sctp-native client", 4*time.Second, 1,
		"sctp-rdma bench: nothing listens on 127.0.0.1:18516 for --llp sctp-native (SCTP over UDP: ICMP port unreachable)",
		nil, "bench", mpaSrv.addr)
	step("The port serves another LLP: an sctp-native server, an mpa client", 4*time.Second, 1,
		"sctp-rdma bench: nothing listens on 127.0.0.1:18515 for --llp mpa (TCP connection refused)",
		nil, "bench", "--llp", "mpa", srv.addr)
	step("A negative size", 2*time.Second, 2,
		`sctp-rdma bench: --size: invalid size "-4K": sizes are positive (a sweep is MIN-MAX, e.g. 64-1M)`,
		nil, "bench", "--size", "-4K", srv.addr)
	step("A size above the server's --max-size (64M by default)", 4*time.Second, 1,
		"sctp-rdma bench: write 100M: stream 1: server refused: message size above the server's --max-size",
		nil, "bench", "--size", "100M", "-n", "1", srv.addr)
	step("A zero size", 2*time.Second, 2, "sctp-rdma demo: --size: sizes must be at least 1 octet", nil, "demo", "--size", "0")
	step("No operation in flight", 2*time.Second, 2, "sctp-rdma bench: --depth must be 1..128", nil, "bench", "--depth", "0", srv.addr)
	step("Two spellings of the iteration count that disagree", 2*time.Second, 2,
		"sctp-rdma ping: --count 5 and --iters 3 disagree: give one (they are the same setting)",
		nil, "ping", "--iters", "3", "--count", "5", srv.addr)

	root, err := vmtest.RepoRoot()
	require.NoError(t, err)
	path := filepath.Join(root, "docs", "cli.md")
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	re := regexp.MustCompile(`(?s)` + regexp.QuoteMeta(transcriptBegin) + `\n.*?` + regexp.QuoteMeta(transcriptEnd))
	block := transcriptBegin + "\n\n" + doc.String() + transcriptEnd
	if os.Getenv(updateDocsEnv) == "1" {
		require.True(t, re.Match(text), "docs/cli.md has no transcript markers")
		require.NoError(t, os.WriteFile(path, re.ReplaceAll(text, []byte(strings.ReplaceAll(block, "$", "$$"))), 0o644))
		return
	}
	assert.Equal(t, block, string(re.Find(text)),
		"docs/cli.md's transcript differs from what the binary prints: %s=1 go test -run TestTranscripts ./cmd/sctp-rdma", updateDocsEnv)
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
