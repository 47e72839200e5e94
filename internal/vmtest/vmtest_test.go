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

func TestStreamLines(t *testing.T) {
	tb := &logTB{TB: t}
	streamLines(tb, strings.NewReader("one\ntwo\n\nlast without newline"))
	assert.Equal(t, []string{"one", "two", "", "last without newline"}, tb.lines)
}
