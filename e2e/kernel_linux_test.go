//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ishidawataru/sctp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/vmtest"
	nsctp "github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/kernel"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// Interop settings (docs/kernel-sctp.md): SCTP over UDP on the registered
// port (RFC 6951), a fixed path MTU well below pion's 8192-octet receive
// buffer, equal stream counts on both sides (pion does not enforce the
// peer's inbound count), and pion's fixed SCTP port 5000.
const (
	encapsPort     = 9899
	interopMTU     = 1200
	interopStreams = 64
	pionSCTPPort   = 5000
	// pionInteropMTU is the path MTU pion assumes when the kernel dials
	// it. See docs/kernel-sctp.md: with interopMTU here the kernel aborts
	// the association ("chunk had invalid length").
	pionInteropMTU = interopMTU
)

// kernelOptions sizes the suite for the TCG-emulated VM; interopOptions adds
// the known shutdown stall between the two stacks (docs/kernel-sctp.md).
var (
	kernelOptions  = Options{Streams: 8, MaxSize: 32 << 10, Timeout: 120 * time.Second}
	interopOptions = Options{Streams: 8, MaxSize: 32 << 10, Timeout: 120 * time.Second, ShutdownStall: true}
)

// TestKernelSuiteInVM runs the end-to-end suite over Linux kernel SCTP on
// 127.0.0.1 and over kernel↔pion interop (SCTP over UDP, RFC 6951), both
// directions. The development and CI kernels have no SCTP: the test then
// boots the qemu VM of internal/tools/vmtest once and runs itself there (never a
// skip: a VM that cannot be set up fails the test).
func TestKernelSuiteInVM(t *testing.T) {
	if !vmtest.KernelHasSCTP() {
		if vmtest.InVM() {
			t.Fatal("running in the test VM but the kernel has no SCTP: sctp.ko not loaded")
		}
		start := time.Now()
		vmtest.RunInVM(t, ".", "^TestKernelSuiteInVM$",
			vmtest.WithSysctl(fmt.Sprintf("net.sctp.udp_port=%d", encapsPort)))
		t.Logf("kernel and interop suites in the VM: %v including build and boot", time.Since(start).Round(time.Second))
		return
	}
	t.Run("Kernel", func(t *testing.T) { Run(t, kernelPair, kernelOptions) })
	if !vmtest.InVM() {
		// A host kernel with SCTP ran the kernel suite above natively. The
		// interop needs net.sctp.udp_port and GSO off on lo, settings of the
		// whole machine made only inside the throw-away VM: run exactly
		// those two subtests there (a VM that cannot boot fails the test).
		vmtest.RunInVM(t, ".", "^TestKernelSuiteInVM$/^(PionDialsKernel|KernelDialsPion|KernelDialsPionListener|NativeDialsKernel|KernelDialsNative|MultihomedNativeDialsKernel_RFC6951|MultihomedKernelDialsNative_RFC6951)$",
			vmtest.WithSysctl(fmt.Sprintf("net.sctp.udp_port=%d", encapsPort)))
		return
	}
	// The kernel drops its own GSO batches over the UDP tunnel
	// (docs/kernel-sctp.md): both offloads off on lo.
	require.NoError(t, setFeatures("lo", false, "tx-generic-segmentation", "tx-sctp-segmentation"))
	t.Run("PionDialsKernel", func(t *testing.T) { Run(t, pionDialsKernel, interopOptions) })
	t.Run("KernelDialsPion", func(t *testing.T) { Run(t, kernelDialsPion, interopOptions) })
	t.Run("KernelDialsPionListener", func(t *testing.T) { Run(t, kernelDialsPionListener, interopOptions) })
	t.Run("NativeDialsKernel", func(t *testing.T) { Run(t, nativeDialsKernel, kernelOptions) })
	t.Run("KernelDialsNative", func(t *testing.T) { Run(t, kernelDialsNative, kernelOptions) })
	t.Run("MultihomedNativeDialsKernel_RFC6951", func(t *testing.T) { testKernelNativeMultihomed(t, true) })
	t.Run("MultihomedKernelDialsNative_RFC6951", func(t *testing.T) { testKernelNativeMultihomed(t, false) })
}

// nativeInteropConfig is the native stack's side of a kernel interop
// association: the kernel's path MTU, equal stream counts.
func nativeInteropConfig() native.Config {
	return native.Config{Streams: interopStreams, MTU: interopMTU}
}

// nativeDialsKernel: the project's own SCTP dials a kernel listener on SCTP
// port 5000 through the kernel's UDP encapsulation port (RFC 6951).
func nativeDialsKernel(t *testing.T) (client, server *sctpllp.Association) {
	t.Helper()
	ln, err := kernel.Stack(interopKernelConfig()).Listen(fmt.Sprintf("127.0.0.1:%d", pionSCTPPort))
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch := acceptAsync(ctx, ln)
	ncfg := nativeInteropConfig()
	ncfg.PeerPort = pionSCTPPort
	nt, err := native.Stack(ncfg, nil).Dial(ctx, fmt.Sprintf("127.0.0.1:%d", encapsPort))
	require.NoError(t, err, "native dial")
	r := <-ch
	if r.err != nil {
		nt.Abort()
	}
	require.NoError(t, r.err, "kernel accept")
	// RFC 5043 §5.1: each end saw the other's DDP indication.
	for _, tr := range []backend.Transport{nt, r.tr} {
		ind, ok := tr.PeerAdaptation()
		assert.True(t, ok, "%s saw the peer's indication", tr.Kind())
		assert.Equal(t, backend.AdaptationIndicationDDP, ind)
	}
	assert.Equal(t, interopStreams, nt.NumStreams())
	return sctpllp.NewAssociation(nt, sctpllp.Config{}), sctpllp.NewAssociation(r.tr, sctpllp.Config{})
}

// kernelDialsNative: the kernel dials a native listener (stateless INIT
// ACK, RFC 9260 §5.1.3) over UDP encapsulation to the listener's port.
func kernelDialsNative(t *testing.T) (client, server *sctpllp.Association) {
	t.Helper()
	ln, err := native.Stack(nativeInteropConfig(), nil).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return kernelDialsListener(t, "native", ln.Addr(),
		ln.Accept, handshakeStats(ln))
}

// kernelDialsPionListener: the kernel dials a pion listener, whose UDP
// demultiplexer answers the INIT statelessly (RFC 9260 §5.1.3) and starts
// pion from the COOKIE ECHO; the kernel's SCTP ports are not pion's
// 5000/5000, so every packet's ports are rewritten both ways.
func kernelDialsPionListener(t *testing.T) (client, server *sctpllp.Association) {
	t.Helper()
	ln, err := pion.Stack(pion.Config{Streams: interopStreams, MTU: pionInteropMTU}).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return kernelDialsListener(t, "pion", ln.Addr(),
		ln.Accept, handshakeStats(ln))
}

// handshakeStats returns ln's HandshakeStats: the userspace stacks'
// listeners count their stateless handshake (backend.Listener).
func handshakeStats(ln backend.Listener) func() nsctp.HandshakeStats {
	return ln.(interface{ HandshakeStats() nsctp.HandshakeStats }).HandshakeStats
}

// kernelDialsListener has the kernel dial SCTP port 7777 through the UDP
// encapsulation port of a userspace listener at addr (RFC 6951), which
// answers the INIT statelessly (one INIT ACK, one cookie accepted) and
// sends the DDP indication (RFC 5043 §5.1) in its INIT ACK.
func kernelDialsListener(t *testing.T, name string, addr net.Addr, accept func(context.Context) (backend.Transport, error),
	stats func() nsctp.HandshakeStats) (client, server *sctpllp.Association) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kcfg := interopKernelConfig()
	kcfg.RemoteUDPEncapsPort = uint16(addr.(*net.UDPAddr).Port)
	kt, err := kernel.Stack(kcfg).Dial(ctx, "127.0.0.1:7777")
	require.NoError(t, err, "kernel dial")
	ut, err := accept(ctx)
	if err != nil {
		kt.Abort()
	}
	require.NoError(t, err, name+" accept")
	st := stats()
	assert.Equal(t, uint64(1), st.InitAcks)
	assert.Equal(t, uint64(1), st.CookiesOK)
	ind, ok := kt.PeerAdaptation()
	assert.True(t, ok)
	assert.Equal(t, backend.AdaptationIndicationDDP, ind, "our INIT ACK's indication")
	assert.Equal(t, interopStreams, kt.NumStreams())
	return sctpllp.NewAssociation(kt, sctpllp.Config{}), sctpllp.NewAssociation(ut, sctpllp.Config{})
}

func kernelAddrPort(a net.Addr) int { return a.(*sctp.SCTPAddr).Port }

// kernelPair is the Factory of kernel SCTP on 127.0.0.1.
func kernelPair(t *testing.T) (client, server *sctpllp.Association) {
	t.Helper()
	cfg := kernel.Config{Streams: interopStreams} // the DDP indication is required by default
	ln, err := kernel.Stack(cfg).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch := acceptAsync(ctx, ln)
	ct, err := kernel.Stack(cfg).Dial(ctx, fmt.Sprintf("127.0.0.1:%d", kernelAddrPort(ln.Addr())))
	require.NoError(t, err)
	r := <-ch
	if r.err != nil {
		ct.Abort()
	}
	require.NoError(t, r.err)
	// RFC 5043 §5.1: both kernels sent the DDP Adaptation Layer Indication.
	for _, tr := range []backend.Transport{ct, r.tr} {
		ind, ok := tr.PeerAdaptation()
		assert.True(t, ok)
		assert.Equal(t, backend.AdaptationIndicationDDP, ind)
	}
	return sctpllp.NewAssociation(ct, sctpllp.Config{}), sctpllp.NewAssociation(r.tr, sctpllp.Config{})
}

type acceptResult struct {
	tr  backend.Transport
	err error
}

func acceptAsync(ctx context.Context, ln backend.Listener) <-chan acceptResult {
	ch := make(chan acceptResult, 1)
	go func() {
		tr, err := ln.Accept(ctx)
		ch <- acceptResult{tr, err}
	}()
	return ch
}

// interopKernelConfig is the kernel side of an interop association.
func interopKernelConfig() kernel.Config {
	return kernel.Config{Streams: interopStreams, PathMTU: interopMTU}
}

// pionDialsKernel: pion (client, SCTP over a UDP socket connected to the
// kernel's encapsulation port) and a kernel listener on SCTP port 5000.
func pionDialsKernel(t *testing.T) (client, server *sctpllp.Association) {
	t.Helper()
	ln, err := kernel.Stack(interopKernelConfig()).Listen(fmt.Sprintf("127.0.0.1:%d", pionSCTPPort))
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch := acceptAsync(ctx, ln)
	udp, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: encapsPort})
	require.NoError(t, err)
	pt, err := pion.NewTransport(ctx, newTap(t, udp), true, pion.Config{Streams: interopStreams, MTU: interopMTU})
	if err != nil {
		udp.Close()
	}
	require.NoError(t, err)
	r := <-ch
	if r.err != nil {
		pt.Abort()
	}
	require.NoError(t, r.err)
	// RFC 5043 §5.1: both ends sent the DDP Adaptation Layer Indication
	// (the pion backend adds it below pion) and required the other's.
	for _, tr := range []backend.Transport{pt, r.tr} {
		ind, ok := tr.PeerAdaptation()
		assert.True(t, ok, "%s saw the peer's indication", tr.Kind())
		assert.Equal(t, backend.AdaptationIndicationDDP, ind)
	}
	assert.Equal(t, interopStreams, r.tr.NumStreams())
	return sctpllp.NewAssociation(pt, sctpllp.Config{}), sctpllp.NewAssociation(r.tr, sctpllp.Config{})
}

// kernelDialsPion: the kernel dials pion's SCTP port 5000, encapsulated to
// pion's UDP port; pion is passive behind the INIT filter.
func kernelDialsPion(t *testing.T) (client, server *sctpllp.Association) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	udp, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: encapsPort})
	require.NoError(t, err)
	filter := pion.NewInitFilterConn(newTap(t, udp))
	type pres struct {
		pt  backend.Transport
		err error
	}
	ch := make(chan pres, 1)
	go func() {
		// The filter's RemoteAddr is the UDP peer: MTU is the IP path MTU.
		pt, err := pion.NewTransport(ctx, filter, false,
			pion.Config{Streams: interopStreams, MTU: pionInteropMTU})
		ch <- pres{pt, err}
	}()
	kcfg := interopKernelConfig()
	kcfg.RemoteUDPEncapsPort = uint16(udp.LocalAddr().(*net.UDPAddr).Port)
	kt, err := kernel.Stack(kcfg).Dial(ctx, fmt.Sprintf("127.0.0.1:%d", pionSCTPPort))
	r := <-ch
	if err != nil || r.err != nil {
		if kt != nil {
			kt.Abort()
		}
		if r.pt != nil {
			r.pt.Abort()
		} else {
			udp.Close()
		}
	}
	require.NoError(t, err, "kernel dial")
	require.NoError(t, r.err, "pion accept")
	assert.Positive(t, filter.(interface{ Stripped() int64 }).Stripped(), "the kernel's INIT needed rewriting for pion")
	assert.Equal(t, interopStreams, kt.NumStreams())
	return sctpllp.NewAssociation(kt, sctpllp.Config{}), sctpllp.NewAssociation(r.pt, sctpllp.Config{})
}
