package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// childEnv selects the role of a re-executed test binary: childPion,
// childNative or childMPA. The child listens on 127.0.0.1, prints "ADDR host:port" on
// stdout, serves one association or connection with a server, and runs
// until it is killed or its stdin closes (so that a child never outlives a
// parent that died).
const (
	childEnv    = "FAULTS_CHILD"
	childPion   = "pion"
	childNative = "native"
	childMPA    = "mpa"
)

// childServer sizes the child's server: 1 KiB Sends, 1024 receives kept
// posted per stream.
var childServer = serverOptions{MemLen: 1 << 20, Recvs: 1024, RecvLen: 2048}

func runChild(role string) int {
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	srv, err := newServer(childServer)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	ctx := context.Background()
	switch role {
	case childPion, childNative:
		ln, err := sctpllp.Listen("127.0.0.1:0", sctpllp.Config{Stack: childStack(role)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		fmt.Printf("ADDR %s\n", ln.Addr())
		a, err := ln.Accept(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		mgr := streams.New(a, srv.pd, streamsConfig(childServer.Recvs))
		err = srv.serveStreams(ctx, mgr)
		fmt.Fprintln(os.Stderr, "child: association ended:", err)
	case childMPA:
		ln, err := mpa.Listen("tcp", "127.0.0.1:0", srv.mpaConfig())
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		fmt.Printf("ADDR %s\n", ln.Addr())
		err = srv.serveMPA(ctx, ln, nil)
		fmt.Fprintln(os.Stderr, "child: listener ended:", err)
	default:
		fmt.Fprintln(os.Stderr, "child: unknown role", role)
		return 2
	}
	select {} // until killed
}

// child is a running server process.
type child struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
	err  error
}

// startChild re-executes the test binary as a server of role and waits
// for its address.
func startChild(t *testing.T, role string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		<-c.done
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		c.err = cmd.Wait()
		close(c.done)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
		require.True(t, ok, "child printed %q instead of its address", line)
		c.addr = addr
	case <-time.After(30 * time.Second):
		t.Fatal("child did not print its address within 30 s")
	}
	return c
}

// kill sends SIGKILL and waits until the process is gone.
func (c *child) kill(t *testing.T) time.Time {
	t.Helper()
	require.NoError(t, c.cmd.Process.Kill())
	at := time.Now()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("killed child did not exit")
	}
	return at
}

// childStack is the SCTP stack of a child's role.
func childStack(role string) backend.Stack {
	if role == childNative {
		return native.Stack(native.Config{}, nil)
	}
	return pion.Stack(pion.Config{})
}
