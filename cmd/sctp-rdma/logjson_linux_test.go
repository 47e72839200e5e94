//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeJSONPrintsOnlyJSON: `serve --json` prints JSON lines and nothing
// else, on stdout and on stderr, even with pion's own debug lines turned
// on (they go through log/slog, internal/pionlog), through a whole bench
// run and the shutdown (issue 19).
func TestServeJSONPrintsOnlyJSON(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveChildEnv+"=--listen 127.0.0.1:0 --llp sctp-pion --json --log-level debug")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var mu sync.Mutex
	var lines []string
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			var ev struct{ Event, Addr string }
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "listening" {
				addr <- ev.Addr
			}
		}
	}()
	var a string
	select {
	case a = <-addr:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("no listening event; stderr:\n%s", stderr.String())
	}
	code, _, errOut := runCLI("bench", "--llp", "sctp-pion", "--connect", a, "-n", "200", "write")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	<-done
	require.NoError(t, cmd.Wait())

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, lines)
	for _, l := range lines {
		assert.True(t, json.Valid([]byte(l)), "stdout line is not JSON: %q", l)
	}
	assert.Contains(t, lines[len(lines)-1], `"event":"stopped"`)
	pionLines := 0
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if l == "" {
			continue
		}
		var rec map[string]any
		if !assert.NoError(t, json.Unmarshal([]byte(l), &rec), "stderr line is not JSON: %q", l) {
			continue
		}
		if _, ok := rec["pion"]; ok {
			pionLines++
		}
	}
	assert.Positive(t, pionLines, "pion's debug lines reach stderr, as JSON records")
}
