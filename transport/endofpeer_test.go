package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// childEnv names the LLP a re-executed test binary serves on: it listens
// on 127.0.0.1, prints "ADDR host:port", echoes every Send, and runs until
// it is killed or its stdin closes.
const childEnv = "TRANSPORT_CHILD_LLP"

// echoFuncs echoes every Send with the adapter of optional functions.
func echoFuncs() *HandlerFuncs {
	return &HandlerFuncs{
		OnPrepare: func(ep *rdmap.Endpoint) error { return ep.PostRecv(0, make([]byte, 64)) },
		OnServe: func(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
			for {
				c, err := ep.Config().RecvCQ.Poll(ctx)
				if err != nil || c.Err != nil {
					return
				}
				out := append([]byte(nil), c.Buf[:c.Length]...)
				if ep.PostRecv(0, c.Buf) != nil || errOf(ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: out})) != nil {
					return
				}
			}
		},
	}
}

// idleStarter is a Starter whose streams do nothing until Serve's
// context ends.
type idleStarter struct{ *HandlerFuncs }

func (idleStarter) Start(context.Context, netip.Addr, *rdmap.Endpoint) {}

func runChild(llp string) int {
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	ln, err := Listen(Options{LLP: llp}, "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	err = ln.Serve(context.Background(), new(rdmap.Device).AllocPD(), echoFuncs())
	fmt.Fprintln(os.Stderr, "child: serve ended:", err)
	return 1
}

// startChild re-executes the test binary as a server over llp; kill
// sends it SIGKILL and waits until it is gone.
func startChild(t *testing.T, llp string) (addr string, kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+llp)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		<-done
	})
	select {
	case line := <-lines:
		a, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
		require.True(t, ok, "child printed %q instead of its address", line)
		addr = a
	case <-time.After(30 * time.Second):
		t.Fatal("child did not print its address within 30 s")
	}
	return addr, func() {
		require.NoError(t, cmd.Process.Kill())
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("killed child did not exit")
		}
	}
}

// unusedAddr is a loopback port where nothing listens: bound once for
// llp's protocol and released.
func unusedAddr(t *testing.T, llp string) string {
	t.Helper()
	if llp == MPA {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().String()
	}
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer c.Close()
	return c.LocalAddr().String()
}

// echoOnce sends b on ep and waits for the echo.
func echoOnce(ctx context.Context, ep *rdmap.Endpoint, b []byte) error {
	buf := make([]byte, 64)
	if err := ep.PostRecv(0, buf); err != nil {
		return err
	}
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: b}); err != nil {
		return err
	}
	c, err := ep.Config().RecvCQ.Poll(ctx)
	if err != nil {
		return err
	}
	if c.Err != nil {
		return c.Err
	}
	if string(c.Buf[:c.Length]) != string(b) {
		return fmt.Errorf("echo %q, want %q", c.Buf[:c.Length], b)
	}
	return nil
}

// runUntilDown sends on ep until the endpoint ends (a killed peer is
// learnt of from what is sent to it), and returns the error of the
// receive buf posted (ID 7) before the peer went away.
func runUntilDown(t *testing.T, ctx context.Context, ep *rdmap.Endpoint, buf []byte) error {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ep.Done():
			c, err := ep.Config().RecvCQ.Poll(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(7), c.WRID)
			require.ErrorIs(t, c.Err, rdmap.ErrFlushed)
			assert.Same(t, &buf[0], &c.Buf[0], "the flushed receive gives its buffer back")
			return c.Err
		case <-tick.C:
			_, _ = ep.PostSend(rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("x"), Unsignaled: true})
		case <-ctx.Done():
			t.Fatalf("the endpoint did not end: %v", ctx.Err())
		}
	}
}

// TestEndOfPeerErrors: each way a peer goes away gives one clear error
// with the same errors.Is target over every LLP. Closed (Serve's context
// ends; a Starter's too): ErrPeerClosed (RFC 5040 §6.2). Aborted (the
// handler aborts: a Terminate, §6.2.1): ErrPeerAborted. Killed (SIGKILL):
// ErrPeerAborted, with ECONNREFUSED over UDP (ICMP, RFC 6951 §5.5) and
// ECONNRESET over TCP; a dead process's kernel may close TCP or kernel
// SCTP gracefully, which is ErrPeerClosed. Refused and nothing listening:
// Dial's *DialError with syscall.ECONNREFUSED.
func TestEndOfPeerErrors(t *testing.T) {
	for _, llp := range []string{SCTPNative, SCTPPion, MPA} {
		endOfPeerCases(t, llp)
	}
}

// TestEndOfPeerErrors_Kernel is TestEndOfPeerErrors over sctp-kernel. The
// development and CI kernels have no SCTP: the test then boots the qemu VM
// of internal/tools/vmtest and runs itself there (never a skip).
func TestEndOfPeerErrors_Kernel(t *testing.T) {
	if !vmtest.KernelHasSCTP() {
		if vmtest.InVM() {
			t.Fatal("running in the test VM but the kernel has no SCTP: sctp.ko not loaded")
		}
		vmtest.RunInVM(t, ".", "^TestEndOfPeerErrors_Kernel$", vmtest.WithTimeout(5*time.Minute))
		return
	}
	endOfPeerCases(t, SCTPKernel)
}

// endOfPeerCases runs TestEndOfPeerErrors' cases over llp.
func endOfPeerCases(t *testing.T, llp string) {
	{
		t.Run(llp+"/closed-starter", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			o := Options{LLP: llp}
			dev := new(rdmap.Device)
			ln, err := Listen(o, "127.0.0.1:0")
			require.NoError(t, err)
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			go func() { served <- ln.Serve(sctx, dev.AllocPD(), idleStarter{&HandlerFuncs{}}) }()
			cl, err := Dial(ctx, o, ln.Addr(), 1, dev.AllocPD(), nil)
			require.NoError(t, err)
			defer cl.Abort()
			ep := cl.Endpoints[0]
			require.NoError(t, ep.PostRecv(9, make([]byte, 64)))
			stop()
			require.NoError(t, <-served)
			c, err := ep.Config().RecvCQ.Poll(ctx)
			require.NoError(t, err)
			require.ErrorIs(t, c.Err, ErrPeerClosed, "a Starter's streams are closed gracefully too")
		})
		t.Run(llp+"/closed", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			o := Options{LLP: llp}
			dev := new(rdmap.Device)
			ln, err := Listen(o, "127.0.0.1:0")
			require.NoError(t, err)
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			go func() { served <- ln.Serve(sctx, dev.AllocPD(), echoFuncs()) }()
			cl, err := Dial(ctx, o, ln.Addr(), 1, dev.AllocPD(), nil)
			require.NoError(t, err)
			defer cl.Abort()
			ep := cl.Endpoints[0]
			require.NoError(t, echoOnce(ctx, ep, []byte("hello")))
			buf := make([]byte, 64)
			require.NoError(t, ep.PostRecv(9, buf))
			stop()
			require.NoError(t, <-served)
			c, err := ep.Config().RecvCQ.Poll(ctx)
			require.NoError(t, err)
			assert.ErrorIs(t, c.Err, rdmap.ErrFlushed)
			require.ErrorIs(t, c.Err, ErrPeerClosed)
			assert.NotErrorIs(t, c.Err, ErrPeerAborted)
			assert.Contains(t, c.Err.Error(), "the peer closed the stream")
			<-ep.Done()
			require.ErrorIs(t, ep.Err(), ErrPeerClosed)
			assert.Equal(t, "rdmap: the peer closed the stream", ep.Err().Error())
		})
		t.Run(llp+"/aborted", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			o := Options{LLP: llp}
			dev := new(rdmap.Device)
			ln, err := Listen(o, "127.0.0.1:0")
			require.NoError(t, err)
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			h := &HandlerFuncs{ // aborts the stream at its first message
				OnPrepare: func(ep *rdmap.Endpoint) error { return ep.PostRecv(0, make([]byte, 64)) },
				OnServe: func(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
					if _, err := ep.Config().RecvCQ.Poll(ctx); err == nil {
						_ = ep.Abort()
					}
				},
			}
			go func() { served <- ln.Serve(sctx, dev.AllocPD(), h) }()
			defer func() { stop(); require.NoError(t, <-served) }()
			cl, err := Dial(ctx, o, ln.Addr(), 1, dev.AllocPD(), nil)
			require.NoError(t, err)
			defer cl.Abort()
			ep := cl.Endpoints[0]
			buf := make([]byte, 64)
			require.NoError(t, ep.PostRecv(7, buf))
			require.NoError(t, errOf(ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("x")})))
			err = runUntilDown(t, ctx, ep, buf)
			t.Logf("%s, peer aborted: %v", llp, err)
			require.ErrorIs(t, err, ErrPeerAborted)
			assert.NotErrorIs(t, err, ErrPeerClosed)
			assert.Contains(t, err.Error(), "the peer terminated the stream")
		})
		t.Run(llp+"/killed", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			addr, kill := startChild(t, llp)
			cl, err := Dial(ctx, Options{LLP: llp}, addr, 1, new(rdmap.Device).AllocPD(), nil)
			require.NoError(t, err)
			defer cl.Abort()
			ep := cl.Endpoints[0]
			require.NoError(t, echoOnce(ctx, ep, []byte("hello")))
			buf := make([]byte, 64)
			require.NoError(t, ep.PostRecv(7, buf))
			kill()
			err = runUntilDown(t, ctx, ep, buf)
			t.Logf("%s, peer killed: %v", llp, err)
			if (llp == MPA || llp == SCTPKernel) && errors.Is(err, ErrPeerClosed) {
				return // the kernel's FIN or SHUTDOWN for the dead process
			}
			require.ErrorIs(t, err, ErrPeerAborted)
			require.ErrorIs(t, ep.Err(), ErrPeerAborted)
			switch llp {
			case MPA:
				assert.ErrorIs(t, err, syscall.ECONNRESET)
			case SCTPKernel: // the kernel ABORTs a dead process's association
			default:
				assert.ErrorIs(t, err, syscall.ECONNREFUSED)
			}
		})
		for _, tc := range []struct {
			name string
			addr func(t *testing.T) string
		}{
			{"refused", func(t *testing.T) string {
				ln, err := Listen(Options{LLP: llp}, "127.0.0.1:0")
				require.NoError(t, err)
				require.NoError(t, ln.Close())
				return ln.Addr()
			}},
			{"nothing-listening", func(t *testing.T) string { return unusedAddr(t, llp) }},
		} {
			t.Run(llp+"/"+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				addr := tc.addr(t)
				_, err := Dial(ctx, Options{LLP: llp}, addr, 1, new(rdmap.Device).AllocPD(), nil)
				require.ErrorIs(t, err, syscall.ECONNREFUSED)
				var de *DialError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, llp, de.LLP)
				assert.Contains(t, err.Error(), "connection refused")
				t.Logf("%s: %v", tc.name, err)
			})
		}
	}
}
