package usrsctp

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// repoRoot finds the module root (for scripts/ and .cache/).
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found")
		dir = parent
	}
}

var (
	setupOnce sync.Once
	peerBin   string
	setupErr  error
)

// ensurePeer installs usrsctp and tshark (scripts/usrsctp-setup.sh,
// idempotent) and builds testdata/peer.c with the system compiler into
// .cache/usrsctp/, once per test binary. Any failure fails the test.
func ensurePeer(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("full tier only (make test): needs usrsctp and tshark from apt")
	}
	root := repoRoot(t)
	setupOnce.Do(func() {
		out, err := exec.Command(filepath.Join(root, "scripts", "usrsctp-setup.sh")).CombinedOutput()
		if err != nil {
			setupErr = fmt.Errorf("scripts/usrsctp-setup.sh: %v\n%s", err, out)
			return
		}
		dir := filepath.Join(root, ".cache", "usrsctp")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			setupErr = err
			return
		}
		// Built under a name of its own, then renamed: two test binaries
		// of this package (go test -count=2 -p 2) never see half a file.
		tmp, err := os.CreateTemp(dir, "peer-*")
		if err != nil {
			setupErr = err
			return
		}
		_ = tmp.Close()
		src := filepath.Join(root, "interop", "usrsctp", "testdata", "peer.c")
		// -DINET -DINET6 as usrsctp.pc says: usrsctp.h's structures depend on them.
		out, err = exec.Command("cc", "-O2", "-Wall", "-Werror", "-DINET", "-DINET6", "-o", tmp.Name(), src,
			"-lusrsctp", "-lpthread").CombinedOutput()
		if err != nil {
			_ = os.Remove(tmp.Name())
			setupErr = fmt.Errorf("cc %s: %v\n%s", src, err, out)
			return
		}
		bin := filepath.Join(dir, "peer")
		if err := os.Rename(tmp.Name(), bin); err != nil {
			setupErr = err
			return
		}
		peerBin = bin
	})
	require.NoError(t, setupErr)
	return peerBin
}

// peer is one running testdata/peer.c: commands on its stdin, its event
// lines collected as they come.
type peer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	port  int // the UDP port usrsctp encapsulates on

	mu     sync.Mutex
	lines  [][]string
	stderr strings.Builder
	exited chan struct{}
}

// startPeer runs the peer in mode "server" (listening on SCTP port
// sctpPort) or "client".
func startPeer(t *testing.T, mode string, sctpPort int) *peer {
	t.Helper()
	bin := ensurePeer(t)
	p := &peer{exited: make(chan struct{})}
	p.cmd = exec.Command(bin, mode, strconv.Itoa(sctpPort))
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, b: &p.stderr}
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			p.mu.Lock()
			p.lines = append(p.lines, f)
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.stop)
	f := p.wait(t, 30*time.Second, "port")
	p.port, err = strconv.Atoi(f[1])
	require.NoError(t, err)
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

// send writes one command line.
func (p *peer) send(t *testing.T, format string, args ...any) {
	t.Helper()
	_, err := fmt.Fprintf(p.stdin, format+"\n", args...)
	require.NoError(t, err, "peer stdin")
}

// find returns the lines whose fields start with prefix.
func (p *peer) find(prefix ...string) [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]string
	for _, f := range p.lines {
		if hasPrefix(f, prefix) {
			out = append(out, f)
		}
	}
	return out
}

func hasPrefix(f, prefix []string) bool {
	if len(f) < len(prefix) {
		return false
	}
	for i, s := range prefix {
		if f[i] != s {
			return false
		}
	}
	return true
}

// wait returns the first line starting with prefix, waiting for it; it
// fails the test after timeout or if the peer exits first.
func (p *peer) wait(t *testing.T, timeout time.Duration, prefix ...string) []string {
	t.Helper()
	return p.waitN(t, timeout, 1, prefix...)[0]
}

// waitN waits for n lines starting with prefix and returns them.
func (p *peer) waitN(t *testing.T, timeout time.Duration, n int, prefix ...string) [][]string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := p.find(prefix...)
		if len(got) >= n {
			return got[:n]
		}
		for _, fatal := range [][]string{{"fatal"}, {"bad-command"}} {
			if l := p.find(fatal...); len(l) > 0 {
				t.Fatalf("peer: %s", strings.Join(l[0], " "))
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("peer exited waiting for %q (%d of %d): %s", prefix, len(got), n, p.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("peer: %d of %d lines %q after %v; its output:\n%s", len(got), n, prefix, timeout, p.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// log is the peer's output so far (the last 60 lines), for failures.
func (p *peer) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	from := max(0, len(p.lines)-60)
	for _, f := range p.lines[from:] {
		b.WriteString(strings.Join(f, " ") + "\n")
	}
	b.WriteString(p.stderr.String())
	return b.String()
}

func (p *peer) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_, _ = fmt.Fprintln(p.stdin, "quit")
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// gen fills b with message k of seed: xorshift64*, as peer.c's gen.
func gen(b []byte, seed, k uint64) {
	x := seed*0x9E3779B97F4A7C15 + k + 1
	for i := 0; i < len(b); i += 8 {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		v := x * 0x2545F4914F6CDD1D
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

// sum is FNV-1a 64, as peer.c's fnv.
func sum(b []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}

// udpDrops returns the datagrams the kernel dropped on the IPv4 UDP
// socket bound to port (the last column of /proc/net/udp: receive buffer
// full), or -1 if no socket is bound to it.
func udpDrops(t *testing.T, port int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/udp")
	require.NoError(t, err)
	want := fmt.Sprintf(":%04X", port)
	total, found := 0, false
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 13 || !strings.HasSuffix(f[1], want) {
			continue
		}
		n, err := strconv.Atoi(f[len(f)-1])
		require.NoError(t, err, line)
		total += n
		found = true
	}
	if !found {
		return -1
	}
	return total
}
