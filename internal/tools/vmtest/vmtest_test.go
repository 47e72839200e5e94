package vmtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGuest checks the harness itself: inside the VM the kernel has SCTP,
// the requested sysctl and environment are in place and the working
// directory holds the package's testdata; outside, it boots the VM to run
// itself there.
func TestGuest(t *testing.T) {
	if !InVM() {
		RunInVM(t, ".", "^TestGuest$",
			WithSysctl("net.sctp.udp_port=9899"),
			WithEnv("VMTEST_PROBE=it's \"quoted\" $HOME"))
		return
	}
	assert.True(t, KernelHasSCTP(), "sctp.ko loaded")
	b, err := os.ReadFile("/proc/sys/net/sctp/udp_port")
	require.NoError(t, err)
	assert.Equal(t, "9899", strings.TrimSpace(string(b)))
	assert.Equal(t, `it's "quoted" $HOME`, os.Getenv("VMTEST_PROBE"))
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, "/test/pkg", wd)
	data, err := os.ReadFile(filepath.Join("testdata", "probe.txt"))
	require.NoError(t, err)
	assert.Equal(t, "vmtest probe\n", string(data))
}

// TestGuestExit is run by TestRunScriptExitStatus inside the VM.
func TestGuestExit(t *testing.T) {
	if !InVM() {
		return // only meaningful as the guest side of TestRunScriptExitStatus
	}
	os.Exit(7)
}

// TestRunScriptExitStatus checks that run.sh returns the guest binary's
// exit status (read from the VMTEST-EXIT marker).
func TestRunScriptExitStatus(t *testing.T) {
	if InVM() {
		return
	}
	if testing.Short() {
		t.Skip("full tier only (make test): needs a qemu VM")
	}
	root, err := RepoRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "vmtest.test")
	require.NoError(t, buildTestBinary(ctx, ".", bin, false))
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts/vm/run.sh"), bin, "-test.run", "^TestGuestExit$")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "run.sh: %v\n%s", err, out)
	assert.Equal(t, 7, ee.ExitCode(), "%s", out)
	assert.Contains(t, string(out), "VMTEST-EXIT=7")
}

// TestKernelHasSCTPMatchesEnvironment checks KernelHasSCTP against what the
// kernel publishes by other means: an SCTP socket can be opened exactly when
// the sctp module is loaded (the socket call loads it on demand), and a loaded
// module shows up as net.sctp sysctls and an SCTP line in /proc/net/protocols.
// In the test VM, whose init loads sctp.ko, it must be true; a host without
// SCTP runs the test there too, so both answers are checked.
func TestKernelHasSCTPMatchesEnvironment(t *testing.T) {
	has := KernelHasSCTP()
	if InVM() {
		require.True(t, has, "the test VM loads sctp.ko")
	}
	_, err := os.Stat("/proc/sys/net/sctp")
	sysctls := err == nil
	protocols, err := os.ReadFile("/proc/net/protocols")
	require.NoError(t, err)
	listed := regexp.MustCompile(`(?m)^SCTP\s`).Match(protocols)
	assert.Equal(t, has, sysctls, "KernelHasSCTP()=%v but /proc/sys/net/sctp present=%v", has, sysctls)
	assert.Equal(t, has, listed, "KernelHasSCTP()=%v but SCTP in /proc/net/protocols=%v", has, listed)
	if !InVM() && !has {
		// The same checks where the answer is yes: in the VM.
		RunInVM(t, ".", "^TestKernelHasSCTPMatchesEnvironment$")
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(root, "go.mod"))
	assert.FileExists(t, filepath.Join(root, "scripts", "vm", "setup.sh"))
}

type logTB struct {
	testing.TB
	lines []string
}

func (l *logTB) Log(args ...any) { l.lines = append(l.lines, args[0].(string)) }

// RunScript streams every line, and kills a VM that started but printed no
// boot marker within the wait (a guest hung in early boot), reporting it
// as silent; set-up before the VM starts is not counted.
func TestRunOnceBootWatchdog(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o755))
		return p
	}
	ctx := context.Background()

	tb := &logTB{TB: t}
	ok := script("ok.sh", "sleep 0.3\necho '"+startMarker+" (2 vCPUs)' >&2\necho "+bootMarker+" uptime=1s\necho two\nprintf 'last without newline'\n")
	silent, err := RunScript(ctx, tb, dir, []string{ok}, 200*time.Millisecond, nil)
	require.NoError(t, err)
	assert.False(t, silent, "set-up before the VM starts does not count")
	assert.Equal(t, []string{startMarker + " (2 vCPUs)", bootMarker + " uptime=1s", "two", "last without newline"}, tb.lines)

	hung := script("hung.sh", "echo '"+startMarker+"' >&2\nexec sleep 30\n")
	begin := time.Now()
	silent, err = RunScript(ctx, &logTB{TB: t}, dir, []string{hung}, 200*time.Millisecond, nil)
	assert.Error(t, err)
	assert.True(t, silent)
	assert.Less(t, time.Since(begin), 15*time.Second)

	fails := script("fails.sh", "echo '"+startMarker+"'\necho "+bootMarker+"\nexit 3\n")
	silent, err = RunScript(ctx, &logTB{TB: t}, dir, []string{fails}, time.Second, nil)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.ExitCode())
	assert.False(t, silent, "a failure after boot is not a silent boot")
}
