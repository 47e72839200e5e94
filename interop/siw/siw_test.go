package siw

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
	"github.com/sctp-rdma/sctp-rdma/iwarp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// guestPorts hands out the VM's server ports: every scenario, and every
// repetition of one under -test.count, listens on a port of its own (a
// loop that gave each repetition the same ports once got no MPA Reply from
// a new rping server on its predecessor's port).
var guestPorts atomic.Int32

func nextGuestPort() int { return 7100 + int(guestPorts.Add(1)) }

// inGuest reports whether this binary runs in the siw VM
// (scripts/vm/siw-guest.sh).
func inGuest() bool { return os.Getenv("SIW_GUEST") == "1" }

// TestSiwInterop runs our rping client and server against Linux siw and
// rdma-core's rping, and our perftest client and server against perftest's
// ib_{write,read,send}_bw -R (beside siw ↔ siw runs of the same tests), in
// a throw-away VM (scripts/vm/siw-run.sh). On the host it builds this
// package's test binary and boots the VM; in the VM it runs the scenarios.
// With CI=true it never skips.
func TestSiwInterop(t *testing.T) {
	if !inGuest() {
		run := "^TestSiwInterop$"
		if r := os.Getenv("SIW_RUN"); r != "" { // e.g. ^TestSiwInterop$/rping-c
			run = r
		}
		runInSiwVM(t, run)
		return
	}
	addr := os.Getenv("SIW_ADDR")
	require.NotEmpty(t, addr)
	setParam := func(t *testing.T, name, v string) {
		require.NoError(t, os.WriteFile("/sys/module/siw/parameters/"+name, []byte(v), 0o644))
	}
	nextPort := nextGuestPort
	const pings = 5

	// Our client (MPA Initiator) against `rping -s` (siw Responder).
	// siwNoORD: with a Request that carries no IRD/ORD (revision 1, or
	// revision 2 without S) siw reports IRD = ORD = 0 to rdma_cm, rping
	// accepts with those, and its RDMA Read cannot be posted ("post send
	// error"): the documented siw/rping limitation (docs/siw-interop.md).
	clientCases := []struct {
		name     string
		cfg      mpa.Config
		size     int
		siwNoORD bool
	}{
		{"rev2-enhanced-crc", mpa.Config{Enhanced: true, IRD: 1, ORD: 1}, 64, false},
		{"rev2-enhanced-nocrc", mpa.Config{Enhanced: true, IRD: 1, ORD: 1, NoCRC: true}, 64, false},
		{"rev2-p2p-write-rtr", mpa.Config{Enhanced: true, IRD: 1, ORD: 1, PeerToPeer: true, RTR: iwarp.RTRWrite}, 64, false},
		{"rev2-p2p-read-rtr", mpa.Config{Enhanced: true, IRD: 1, ORD: 1, PeerToPeer: true, RTR: iwarp.RTRRead}, 64, false},
		{"rev2-crc-60000", mpa.Config{Enhanced: true, IRD: 1, ORD: 1}, 60000, false},
		{"rev2-plain-nocrc", mpa.Config{NoCRC: true}, 64, true},
		{"rev1-crc", mpa.Config{Revision: iwarpwire.MPARev1}, 64, true},
	}
	for _, tc := range clientCases {
		t.Run("ours-client-vs-rping-s/"+tc.name, func(t *testing.T) {
			var (
				srv *tool
				st  Stats
				err error
			)
			for attempt := 1; attempt <= 2; attempt++ {
				p := nextPort()
				srv = startTool(t, "rping", "-s", "-a", addr, "-p", fmt.Sprint(p), "-S", fmt.Sprint(tc.size), "-v")
				waitListen(t, p)
				// 5 pings take ~0.1 s; 20 s bounds the stall of knownGuestBug.
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				st, err = Client(ctx, fmt.Sprintf("%s:%d", addr, p), Config{MPA: tc.cfg, Size: tc.size, Count: pings})
				cancel()
				if attempt == 1 && siwDroppedFirstExchange(err, srv.output()) {
					// Seen in about one CI run in three, each time in a
					// different scenario, never twice in a row, and in 2
					// of 199 runs of the rev2-enhanced scenarios in a
					// loop: siw acknowledges our first Send and never
					// delivers it, sends nothing more (no Terminate, no
					// FIN), and rping's server reports a DISCONNECT; our
					// client waits out its 20 s (docs/siw-interop.md,
					// open questions). One more attempt, logged.
					t.Logf("attempt 1: rping -s reported a DISCONNECT before our first Send was taken and kept the connection open (%v); once more", err)
					continue
				}
				break
			}
			if tc.siwNoORD {
				require.Error(t, err)
				assert.ErrorIs(t, err, rdmap.ErrPeerClosed)
				assert.Eventually(t, func() bool { return strings.Contains(srv.output(), "post send error") },
					20*time.Second, 50*time.Millisecond, "rping -s could not post its RDMA Read; output:\n%s", srv.output())
				t.Logf("as documented, siw's rping server cannot Read without negotiated IRD/ORD: %v", err)
				return
			}
			require.NoError(t, err, "rping -s output:\n%s", srv.output())
			assert.Equal(t, pings, st.Iterations)
			t.Logf("negotiated: rev %d crc %v enhanced %v ird %d ord %d p2p %v rtr %v; %d pings in %v",
				st.Params.Revision, st.Params.CRC, st.Params.Enhanced, st.Params.IRD, st.Params.ORD,
				st.Params.PeerToPeer, st.Params.RTR, st.Iterations, st.Elapsed)
			assert.Equal(t, !tc.cfg.NoCRC, st.Params.CRC)
			if tc.cfg.PeerToPeer {
				assert.Equal(t, tc.cfg.RTR, st.Params.RTR, "siw answers the RTR option offered (RFC 6581 §9.2)")
			}
			out := srv.waitServer(t)
			if tc.size <= 256 {
				assert.Contains(t, out, fmt.Sprintf("server ping data: rdma-ping-%d: ", pings-1))
			}
		})
	}

	// `rping -c` (siw Initiator) against our server (MPA Responder).
	serverCases := []struct {
		name   string
		params map[string]string // siw module parameters for the Initiator
		cfg    mpa.Config
		size   int
		crc    bool
	}{
		{"rev2-default", nil, mpa.Config{IRD: 4, ORD: 4}, 64, true},
		{"rev2-nocrc", nil, mpa.Config{NoCRC: true, IRD: 1, ORD: 1}, 64, false},
		{"rev2-siw-requires-crc", map[string]string{"mpa_crc_required": "Y"}, mpa.Config{NoCRC: true, IRD: 1, ORD: 1}, 64, true},
		{"rev1", map[string]string{"mpa_version": "1"}, mpa.Config{}, 64, true},
		{"rev1-nocrc", map[string]string{"mpa_version": "1"}, mpa.Config{NoCRC: true}, 64, false},
		{"rev2-p2p-write-rtr", map[string]string{"peer_to_peer": "Y"}, mpa.Config{RTR: iwarp.RTRWrite, IRD: 1, ORD: 1}, 64, true},
		{"rev2-p2p-read-rtr", map[string]string{"peer_to_peer": "Y"}, mpa.Config{RTR: iwarp.RTRRead, IRD: 1, ORD: 1}, 64, true},
		{"rev2-4000", nil, mpa.Config{IRD: 1, ORD: 1}, 4000, true},
	}
	defaults := map[string]string{"mpa_crc_required": "N", "mpa_version": "2", "peer_to_peer": "N"}
	for _, tc := range serverCases {
		t.Run("rping-c-vs-ours-server/"+tc.name, func(t *testing.T) {
			for k, v := range defaults {
				setParam(t, k, v)
			}
			for k, v := range tc.params {
				setParam(t, k, v)
			}
			defer func() {
				for k, v := range defaults {
					setParam(t, k, v)
				}
			}()
			p := nextPort()
			ln, err := mpa.Listen("tcp", fmt.Sprintf("%s:%d", addr, p), &tc.cfg)
			require.NoError(t, err)
			defer ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			type result struct {
				st  Stats
				err error
			}
			res := make(chan result, 1)
			go func() {
				st, err := Serve(ctx, ln, Config{Size: tc.size})
				res <- result{st, err}
			}()
			cli := startTool(t, "rping", "-c", "-a", addr, "-p", fmt.Sprint(p), "-C", fmt.Sprint(pings),
				"-S", fmt.Sprint(tc.size), "-V", "-v")
			out := cli.wait(t)
			r := <-res
			require.NoError(t, r.err, "rping -c output:\n%s", out)
			assert.Equal(t, pings, r.st.Iterations)
			assert.Equal(t, tc.crc, r.st.Params.CRC)
			assert.Contains(t, out, fmt.Sprintf("ping data: rdma-ping-%d: ", pings-1))
			t.Logf("negotiated: rev %d crc %v enhanced %v ird %d ord %d p2p %v rtr %v; %d pings in %v",
				r.st.Params.Revision, r.st.Params.CRC, r.st.Params.Enhanced, r.st.Params.IRD, r.st.Params.ORD,
				r.st.Params.PeerToPeer, r.st.Params.RTR, r.st.Iterations, r.st.Elapsed)
		})
	}

	// perftest's ib_{write,read,send}_bw -R, both ways and siw ↔ siw
	// (perftest_vm_test.go).
	perftestScenarios(t, addr)
}

// tool is a running rdma-core program whose output is collected.
type tool struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan error
}

func (tl *tool) Write(p []byte) (int, error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.buf.Write(p)
}

func (tl *tool) output() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.buf.String()
}

func startTool(t *testing.T, name string, args ...string) *tool {
	t.Helper()
	tl := &tool{done: make(chan error, 1)}
	tl.cmd = exec.Command(name, args...)
	tl.cmd.Stdout, tl.cmd.Stderr = tl, tl
	require.NoError(t, tl.cmd.Start())
	go func() { tl.done <- tl.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-tl.done:
		default:
			_ = tl.cmd.Process.Kill()
			<-tl.done
		}
	})
	return tl
}

// waitServer is wait for an rping server after our client's last ping
// and disconnect. rping's CM thread sometimes reads its event channel
// after the main thread has destroyed it ("rdma_get_cm_event: Bad file
// descriptor", exit 255; seen twice on a loaded host, after every ping
// had been verified at both ends): that race inside rping, and only
// that, is not counted against us.
func (tl *tool) waitServer(t *testing.T) string {
	t.Helper()
	select {
	case err := <-tl.done:
		tl.done <- err
		out := tl.output()
		if err != nil && strings.Contains(out, "server DISCONNECT EVENT") &&
			strings.Contains(out, "rdma_get_cm_event: Bad file descriptor") {
			t.Logf("rping -s exited with %v in its own teardown race (CM thread after the channel was destroyed); the pings are checked below", err)
			return out
		}
		require.NoError(t, err, "%s output:\n%s", tl.cmd.Path, out)
		return out
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit; output:\n%s", tl.cmd.Path, tl.output())
		return ""
	}
}

// tryWait is wait without failing: a tool still running after d is
// killed, and it and a tool that exited with an error are reported with
// false (the error, or nil for a hang, beside).
func (tl *tool) tryWait(t *testing.T, d time.Duration) (string, bool, error) {
	t.Helper()
	select {
	case err := <-tl.done:
		tl.done <- err
		return tl.output(), err == nil, err
	case <-time.After(d):
		_ = tl.cmd.Process.Kill()
		err := <-tl.done
		tl.done <- err
		return tl.output(), false, nil
	}
}

// wait waits for the tool to exit with status 0 and returns its output.
func (tl *tool) wait(t *testing.T) string {
	t.Helper()
	select {
	case err := <-tl.done:
		tl.done <- err
		require.NoError(t, err, "%s output:\n%s", tl.cmd.Path, tl.output())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit; output:\n%s", tl.cmd.Path, tl.output())
	}
	return tl.output()
}

// waitListen waits until a TCP socket listens on port (siw's listening
// socket is a kernel socket, visible in /proc/net/tcp).
func waitListen(t *testing.T, port int) {
	t.Helper()
	want := fmt.Sprintf(":%04X ", port)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		f, err := os.Open("/proc/net/tcp")
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && strings.HasSuffix(fields[1]+" ", want) && fields[3] == "0A" {
				_ = f.Close()
				return
			}
		}
		_ = f.Close()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on port %d", port)
}

// runInSiwVM builds this package's test binary (static) and runs it in
// the siw VM via scripts/vm/siw-run.sh, streaming its output.
func runInSiwVM(t *testing.T, runRegex string) {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	if testing.Short() {
		t.Skip("full tier only (make test): needs the siw qemu VM")
	}
	root, err := vmtest.RepoRoot()
	require.NoError(t, err)
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil && os.Geteuid() != 0 && !ci {
		t.Skip("no qemu-system-x86_64 and not root to install it (CI=true makes this a failure)")
	}
	timeout := 8 * time.Minute
	var perfEnv []string // make siw-perf: longer perftest runs, several rounds
	for _, name := range []string{"SIW_PERFTEST_ITERS", "SIW_PERFTEST_RUNS"} {
		if v := os.Getenv(name); v != "" {
			perfEnv = append(perfEnv, "--env", name+"="+v)
			timeout = 40 * time.Minute
		}
	}
	if d, ok := t.Deadline(); ok && time.Until(d)-20*time.Second < timeout {
		timeout = time.Until(d) - 20*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "siw.test")
	start := time.Now()
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the test binary: %s", out)
	t.Logf("siw-vm: built %s in %v", filepath.Base(bin), time.Since(start).Round(time.Millisecond))

	run := func(timeout time.Duration) (silent bool, guestBug string, err error) {
		args := []string{filepath.Join(root, "scripts", "vm", "siw-run.sh"), "--timeout", fmt.Sprint(int(timeout.Seconds()))}
		if ci {
			args = append(args, "--env", "CI=true")
		}
		args = append(args, perfEnv...)
		args = append(args, bin, "-test.run", runRegex, "-test.v", "-test.count=1", "-test.timeout", (timeout - 15*time.Second).String())
		var panicked bool
		silent, err = vmtest.RunScript(ctx, t, root, args, vmtest.BootWait, func(line string) {
			if m := knownGuestBug.FindString(line); m != "" && guestBug == "" {
				guestBug = m
			}
			panicked = panicked || strings.Contains(line, "Kernel panic - not syncing")
		})
		if !panicked {
			guestBug = ""
		}
		return silent, guestBug, err
	}
	start = time.Now()
	silent, bug, err := run(timeout)
	if err != nil && (bug != "" || silent) {
		// The guest kernel, not this project, failed: it crashed (see
		// knownGuestBug) or hung in early boot. The VM is gone with every
		// scenario after that point. Boot a fresh VM once; a second such
		// failure, or any other failure, fails.
		if left := time.Until(start.Add(timeout)); left < 3*time.Minute {
			require.NoError(t, err, "the guest kernel failed (%q, silent boot %v) and too little time is left to rerun the VM suite", bug, silent)
		}
		if silent {
			t.Logf("siw-vm: the guest printed nothing in %v: rerunning the VM suite once in a fresh VM", vmtest.BootWait)
		} else {
			t.Logf("siw-vm: the guest kernel hit %q, the siw/iw_cm bug described in docs/siw-interop.md; rerunning the VM suite once in a fresh VM", bug)
		}
		_, _, err = run(time.Until(start.Add(timeout)))
	}
	require.NoError(t, err, "the siw VM suite failed (exit 125: VM or siw set-up failed; see the output above)")
	t.Logf("siw-vm: %s passed in the VM (%v including set-up check and boot)", runRegex, time.Since(start).Round(time.Millisecond))
}

// knownGuestBug matches the kernel BUG that Debian 12's 6.1 siw/iw_cm can
// hit in the peer-to-peer scenarios, whatever the peer does: siw's
// siw_accept sends the MPA Reply before it installs the socket callback
// that waits for the RTR, so an RTR (and the first message after it) that
// arrives in between raises no callback and the connection stalls; when
// the Initiator then gives up and closes, siw reports IW_CM_EVENT_CLOSE for
// a cm_id still in CONN_RECV, and iw_cm's cm_close_handler BUG()s
// (drivers/infiniband/core/iwcm.c). Upstream discussed the state half of
// it as "rdma/siw: let siw_accept() deferr RDMA_MODE until
// EVENT_ESTABLISHED" (linux-rdma, May 2021).
// siwDroppedFirstExchange reports the intermittent failure of an rping
// scenario with our client: our client timed out waiting for the server's
// first advertisement, and the rping server printed a DISCONNECT event
// (followed, when it had time to print it before we read its output, by
// "wait for RDMA_READ_ADV state 10", its QP in ERROR). The wire of such a
// run (rpingStallPcap) shows siw's MPA Reply, our first Send acknowledged
// by siw's TCP, and nothing more from siw: siw_accept sends the Reply
// before it installs the QP's data-ready callback, and the connection
// manager's callback ignores data in RDMA mode (docs/siw-interop.md).
func siwDroppedFirstExchange(err error, serverOutput string) bool {
	return err != nil && errors.Is(err, context.DeadlineExceeded) &&
		strings.Contains(serverOutput, "server DISCONNECT EVENT")
}

var knownGuestBug = regexp.MustCompile(`kernel BUG at drivers/infiniband/(core/iwcm\.c|sw/siw/[a-z_]+\.c):\d+`)

func TestKnownGuestBug(t *testing.T) {
	for line, want := range map[string]string{
		"[   68.394891] kernel BUG at drivers/infiniband/core/iwcm.c:969!":      "kernel BUG at drivers/infiniband/core/iwcm.c:969",
		"[   12.000000] kernel BUG at drivers/infiniband/sw/siw/siw_cm.c:1234!": "kernel BUG at drivers/infiniband/sw/siw/siw_cm.c:1234",
		"[   12.000000] kernel BUG at mm/slub.c:100!":                           "",
		"--- FAIL: TestSiwInterop/ours-client-vs-rping-s/rev2-p2p-read-rtr":     "",
	} {
		assert.Equal(t, want, knownGuestBug.FindString(line), line)
	}
}

func TestSiwServerTeardownError(t *testing.T) {
	// ib_send_bw -R's output in a failed CI run (docs/siw-interop.md).
	failed := " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n" +
		" 65536      200              0.00               15.85  \t\t   0.000254 Bad wc status 2\n" +
		" Unable to write from socket/rdma_cm\n Failed to close connection between server and client\n" +
		" Trying to close this side resources\n"
	assert.True(t, siwServerTeardownError(failed))
	assert.Equal(t, "Trying to close this side resources", lastLine(failed))
	ok := " 65536      200              0.00               35.88  \t\t   0.000574\n"
	assert.False(t, siwServerTeardownError(ok))
	assert.False(t, parsePerftest(failed).HaveLine, "the figures line with the error is not taken")
}

func TestSiwServerFailedFirstExchange(t *testing.T) {
	// ib_send_bw -R's output in a failed CI run, and our client's error.
	out := " Bad wc status 5\n Unable to write from socket/rdma_cm\n Failed to exchange data between server and clients\n"
	err := fmt.Errorf("siw: perftest control message 1 (version): %w", context.DeadlineExceeded)
	assert.True(t, siwServerFailedFirstExchange(err, out))
	assert.False(t, siwServerFailedFirstExchange(nil, out), "our client succeeded")
	assert.False(t, siwServerFailedFirstExchange(fmt.Errorf("x: %w", rdmap.ErrPeerClosed), out), "not the silent stall")
	assert.False(t, siwServerFailedFirstExchange(err, ""), "the server that answered nothing is another case")
}

func TestSiwDroppedFirstExchange(t *testing.T) {
	err := fmt.Errorf("ping 0: waiting for RDMA_WRITE_ADV: %w", context.DeadlineExceeded)
	// Both outputs of rping -s seen in the siw VM.
	assert.True(t, siwDroppedFirstExchange(err, "server DISCONNECT EVENT...\nwait for RDMA_READ_ADV state 10\n"))
	assert.True(t, siwDroppedFirstExchange(err, "server DISCONNECT EVENT...\n"))
	assert.False(t, siwDroppedFirstExchange(err, ""), "a server that printed nothing")
	assert.False(t, siwDroppedFirstExchange(nil, "server DISCONNECT EVENT...\n"))
	assert.False(t, siwDroppedFirstExchange(fmt.Errorf("x: %w", rdmap.ErrPeerClosed), "server DISCONNECT EVENT...\n"),
		"a connection the server closed is not the stall")
}
