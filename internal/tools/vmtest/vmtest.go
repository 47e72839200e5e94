// Package vmtest runs Go tests inside a throw-away qemu virtual machine that
// boots Debian's Linux kernel with SCTP loaded, for machines whose own kernel
// has no SCTP (CONFIG_IP_SCTP unset). The VM is prepared by
// scripts/vm/setup.sh and driven by scripts/vm/run.sh; see
// scripts/vm/README.md for the recipe and its costs.
//
// The usual pattern is a test that runs its real body where the kernel has
// SCTP and otherwise re-runs itself in the VM (RunInVM).
package vmtest

// For example:
//
//	func TestKernelSCTP(t *testing.T) {
//		if !vmtest.KernelHasSCTP() {
//			vmtest.RunInVM(t, ".", "^TestKernelSCTP$")
//			return
//		}
//		// ... the suite, now on a kernel with SCTP ...
//	}

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// EnvInVM is the environment variable that is "1" for a binary running
// inside the test VM.
const EnvInVM = "SCTPRDMA_IN_VM"

// InVM reports whether the calling binary runs inside the test VM.
func InVM() bool { return os.Getenv(EnvInVM) == "1" }

// Option adjusts a RunInVM call.
type Option func(*config)

type config struct {
	sysctls []string
	env     []string
	args    []string
	timeout time.Duration
	race    bool
	onLine  func(string)
}

// WithSysctl sets a sysctl ("net.sctp.udp_port=9899") in the guest before
// the test binary starts.
func WithSysctl(keyValue string) Option {
	return func(c *config) { c.sysctls = append(c.sysctls, keyValue) }
}

// WithEnv exports NAME=VALUE to the test binary in the guest.
func WithEnv(nameValue string) Option {
	return func(c *config) { c.env = append(c.env, nameValue) }
}

// WithArgs appends arguments for the test binary (e.g. "-test.benchtime=1x").
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// WithTimeout bounds the whole VM run, boot included (default: what is left
// of the calling test's deadline less a margin, at most 10 minutes).
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithRace chooses whether the guest test binary is built with the race
// detector (default: the same as the calling binary).
func WithRace(on bool) Option {
	return func(c *config) { c.race = on }
}

// WithOutput passes every line of the VM's console (the guest binary's
// output among it) to fn, as well as to t.Log: how a guest hands results
// back to the host.
func WithOutput(fn func(line string)) Option {
	return func(c *config) { c.onLine = fn }
}

// RepoRoot returns the module root: the nearest directory at or above the
// working directory that holds go.mod and scripts/vm/run.sh.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "scripts", "vm", "run.sh")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("vmtest: no directory with go.mod and scripts/vm/run.sh above the working directory")
		}
		dir = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// RunInVM builds the test binary of the package in pkgDir (relative to the
// working directory, normally ".") and runs it in the VM with
// -test.run=runRegex -test.v, streaming the guest's console into t.Log. The
// test fails if the VM cannot be set up, if the binary exits non-zero or if
// the run times out. The package's testdata directory, if any, is copied
// into the guest and is the binary's working directory's testdata, as under
// go test.
func RunInVM(t testing.TB, pkgDir, runRegex string, opts ...Option) {
	t.Helper()
	if testing.Short() {
		t.Skip("full tier only (make test): needs a qemu VM")
	}
	cfg := config{race: raceEnabled}
	for _, o := range opts {
		o(&cfg)
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("vmtest: %v", err)
	}
	absPkg, err := filepath.Abs(pkgDir)
	if err != nil {
		t.Fatalf("vmtest: %v", err)
	}

	timeout := cfg.timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
		if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
			if d, has := dl.Deadline(); has {
				if left := time.Until(d) - 15*time.Second; left < timeout {
					timeout = left
				}
			}
		}
	}
	if timeout <= 0 {
		t.Fatalf("vmtest: no time left before the test deadline to boot a VM")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	dir := t.TempDir()
	bin := filepath.Join(dir, filepath.Base(absPkg)+".test")
	start := time.Now()
	if err := buildTestBinary(ctx, absPkg, bin, cfg.race); err != nil {
		t.Fatalf("vmtest: building the test binary of %s: %v", absPkg, err)
	}
	t.Logf("vmtest: built %s (race=%v) in %v", filepath.Base(bin), cfg.race, time.Since(start).Round(time.Millisecond))

	args := []string{filepath.Join(root, "scripts", "vm", "run.sh"),
		"--timeout", fmt.Sprint(int(timeout.Seconds())),
		"--cwd", "/test/pkg",
	}
	if td := filepath.Join(absPkg, "testdata"); fileExists(td) {
		args = append(args, "--include", td+"=/test/pkg/testdata")
	}
	for _, s := range cfg.sysctls {
		args = append(args, "--sysctl", s)
	}
	env := cfg.env
	if ci := os.Getenv("CI"); ci != "" {
		env = append([]string{"CI=" + ci}, env...)
	}
	for _, e := range env {
		args = append(args, "--env", e)
	}
	args = append(args, bin, "-test.run", runRegex, "-test.v", "-test.count=1",
		"-test.timeout", fmt.Sprint(timeout-10*time.Second))
	args = append(args, cfg.args...)

	// A guest that prints nothing at all, not even the init's boot marker,
	// within BootWait hung in early boot under TCG (seen once in CI: ten
	// silent minutes at full CPU, while the same run boots in 2 s alone).
	// Such a VM is killed and booted once more; a second silent boot, or
	// any failure after the marker, fails the test.
	start = time.Now()
	for attempt := 1; ; attempt++ {
		silent, err := RunScript(ctx, t, root, args, BootWait, cfg.onLine)
		elapsed := time.Since(start).Round(time.Millisecond)
		if silent && attempt == 1 && ctx.Err() == nil {
			t.Logf("vmtest: the guest printed nothing in %v (no %s): killed, booting a fresh VM once more", BootWait, bootMarker)
			continue
		}
		if err != nil {
			var ee *exec.ExitError
			switch {
			case silent:
				t.Fatalf("vmtest: the guest printed nothing in %v, twice (no %s)", BootWait, bootMarker)
			case ctx.Err() != nil:
				t.Fatalf("vmtest: VM run of %s timed out after %v", runRegex, elapsed)
			case errors.As(err, &ee):
				t.Fatalf("vmtest: %s failed in the VM (exit status %d, %v); output above. "+
					"Exit 125 means the VM could not be set up or booted (see scripts/vm/README.md)",
					runRegex, ee.ExitCode(), elapsed)
			default:
				t.Fatalf("vmtest: running the VM: %v", err)
			}
		}
		t.Logf("vmtest: %s passed in the VM (%v including boot)", runRegex, elapsed)
		return
	}
}

// bootMarker is what the guest's init prints first (scripts/vm/init.sh);
// startMarker is what run.sh prints as it starts qemu, after set-up.
const (
	bootMarker  = "VMTEST-BOOTED"
	startMarker = "run.sh: starting the VM"
)

// BootWait bounds the time from startMarker to bootMarker (the boot takes
// 2-5 s under TCG; set-up before it, which may build images or wait for
// another package's build, is not counted).
var BootWait = 3 * time.Minute

// RunScript runs a VM script of scripts/vm (run.sh, or siw-run.sh which
// execs it) once: bash args in the directory root, every output line into
// t.Log and to onLine (if not nil). silent reports a run killed because no
// line carried the guest's boot marker within wait of the VM's start (a
// guest hung in early boot; the caller may boot once more).
func RunScript(ctx context.Context, t testing.TB, root string, args []string, wait time.Duration, onLine func(string)) (silent bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", args...)
	cmd.Dir = root
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("starting run.sh: %w", err)
	}
	var booted, timedOut atomic.Bool
	var watchdog *time.Timer
	defer func() {
		if watchdog != nil {
			watchdog.Stop()
		}
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, startMarker) && watchdog == nil:
			watchdog = time.AfterFunc(wait, func() {
				if !booted.Load() {
					timedOut.Store(true)
					cancel()
				}
			})
		case strings.Contains(line, bootMarker):
			booted.Store(true)
		}
		t.Log(line)
		if onLine != nil {
			onLine(line)
		}
	}
	err = cmd.Wait()
	return timedOut.Load(), err
}

// buildTestBinary compiles the test binary of pkg into out: statically
// (CGO_ENABLED=0) without the race detector, dynamically with it (run.sh
// copies the shared libraries into the guest).
func buildTestBinary(ctx context.Context, pkg, out string, race bool) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"test", "-c", "-o", out}
	cgo := "CGO_ENABLED=0"
	if race {
		args = append(args, "-race")
		cgo = "CGO_ENABLED=1"
	}
	args = append(args, ".")
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), cgo, "GOOS=linux", "GOARCH=amd64")
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(b)))
	}
	return nil
}
