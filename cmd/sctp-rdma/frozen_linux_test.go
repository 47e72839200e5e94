//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveChildEnv makes the test binary run `sctp-rdma serve` with the
// arguments in the variable (space separated): a server in a process of
// its own, that a test can freeze (SIGSTOP).
const serveChildEnv = "SCTP_RDMA_TEST_SERVE"

func init() {
	if args := os.Getenv(serveChildEnv); args != "" {
		os.Exit(run(append([]string{"serve"}, strings.Fields(args)...), os.Stdout, os.Stderr))
	}
}

// serveChild starts a server process and returns its address.
func serveChild(t *testing.T, args string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveChildEnv+"=--listen 127.0.0.1:0 "+args)
	return cmd, startServer(t, cmd)
}

// startServer starts cmd, a `serve` process, and returns the address it
// listens on; the process is killed (woken first, if stopped) when the
// test ends.
func startServer(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	return startServerLog(t, cmd, nil)
}

// startServerLog is startServer, copying the server's output to log.
func startServerLog(t *testing.T, cmd *exec.Cmd, log *lockedBuffer) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if log != nil {
				_, _ = log.Write([]byte(sc.Text() + "\n"))
			}
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(20 * time.Second):
		t.Fatalf("the server process %v did not start", cmd.Args)
		return ""
	}
}

// TestFrozenPeer: the server process is stopped (SIGSTOP) 1 s into a 4 s
// bench run. The run ends within its duration plus the LLP's stall grace,
// with a non-zero exit and a first line naming the cause, over every LLP
// of the host (issue 19: a frozen MPA peer must not hang the client).
func TestFrozenPeer(t *testing.T) {
	for _, llp := range []string{"sctp-pion", "sctp-native", "mpa"} {
		t.Run(llp, func(t *testing.T) {
			cmd, addr := serveChild(t, "--llp "+llp)
			time.AfterFunc(time.Second, func() { _ = cmd.Process.Signal(syscall.SIGSTOP) })
			start := time.Now()
			code, out, errOut := runCLI("bench", "--llp", llp, "--connect", addr, "--duration", "4s", "write")
			took := time.Since(start)
			t.Logf("%s: exit %d after %v: %s", llp, code, took.Round(100*time.Millisecond), strings.SplitN(errOut, "\n", 2)[0])
			assert.NotEqual(t, 0, code)
			assert.Less(t, took, 4*time.Second+stallTimeout(0, llp)+2*time.Second, "duration + stall grace + teardown")
			assert.Contains(t, strings.SplitN(errOut, "\n", 2)[0], "peer unresponsive")
			if llp != "mpa" {
				// The client's association was retransmitting to the
				// frozen peer, and the line says so.
				assert.Regexp(t, `this end's SCTP association: [1-9]\d* DATA chunks retransmitted`, errOut)
			}
			// What was measured in the first second is printed, marked.
			assert.Contains(t, out, "(partial", out)
			assert.Regexp(t, `65536\s+all\s+[1-9]\d*\s`, out, "a row of the operations done before the freeze")
		})
	}
}

// TestServerLogsStallOnce: the server is frozen 1 s into a run, the
// client gives up (its stall watchdog aborts the association), then the
// server resumes: it logs the stream's end once, as one line with the
// cause, not the whole error chain twice (issue 48).
func TestServerLogsStallOnce(t *testing.T) {
	for _, llp := range []string{"sctp-native", "mpa"} {
		t.Run(llp, func(t *testing.T) {
			var log lockedBuffer
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), serveChildEnv+"=--listen 127.0.0.1:0 --llp "+llp)
			addr := startServerLog(t, cmd, &log)
			time.AfterFunc(time.Second, func() { _ = cmd.Process.Signal(syscall.SIGSTOP) })
			code, _, errOut := runCLI("bench", "--llp", llp, "--connect", addr, "--duration", "3s", "write")
			require.NotEqual(t, 0, code)
			require.Contains(t, errOut, "peer unresponsive")
			require.NoError(t, cmd.Process.Signal(syscall.SIGCONT))
			require.Eventually(t, func() bool { return strings.Contains(log.String(), "stream failed") }, 30*time.Second, 50*time.Millisecond)
			time.Sleep(time.Second) // a second line would follow at once
			var failed []string
			for _, l := range strings.Split(log.String(), "\n") {
				if strings.Contains(l, "stream failed") {
					failed = append(failed, l)
				}
			}
			require.Len(t, failed, 1, log.String())
			t.Log(failed[0])
			assert.Regexp(t, `^stream failed \(write test, client 127\.0\.0\.1\): \S`, failed[0])
			assert.NotContains(t, failed[0], "(stream:", "the chain once")
			assert.NotContains(t, failed[0], "rdmap:", "the cause, not every layer's wrapping")
		})
	}
}
