//go:build linux

package nstest

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
	"github.com/sctp-rdma/sctp-rdma/internal/sctp/dplpmtud"
	"github.com/sctp-rdma/sctp-rdma/llp"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
)

// requireRoot skips without root, except under CI=true where the missing
// privilege is a failure: these tests must run in CI.
func requireRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("full tier only (make test): needs root and network namespaces")
	}
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("network namespace tests need root (CAP_NET_ADMIN); CI must run them as root")
	}
	t.Skip("needs root for network namespaces (runs in CI)")
}

func topology(t *testing.T, mtu int) *netns.Topology {
	t.Helper()
	requireRoot(t)
	topo, err := netns.NewTopology(mtu)
	require.NoError(t, err)
	t.Cleanup(topo.Destroy)
	// PMTU_CAPTURE=file.pcap records link A at h1 with tshark (debugging).
	if f := os.Getenv("PMTU_CAPTURE"); f != "" {
		cmd := exec.Command("ip", "netns", "exec", topo.H1, "tshark", "-i", "a0", "-w", f)
		require.NoError(t, cmd.Start())
		time.Sleep(time.Second)
		t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	}
	return topo
}

// segment is one DDP segment the client handed to its LLP.
type segment struct {
	n     int
	phase int
}

// recStream records the size of every DDP segment sent, tagged with the
// phase current at the time.
type recStream struct {
	llp.Stream
	mu    sync.Mutex
	segs  []segment
	phase int
}

func (r *recStream) SendSegment(hdr, payload []byte) error {
	err := r.Stream.SendSegment(hdr, payload)
	if err == nil {
		r.mu.Lock()
		r.segs = append(r.segs, segment{len(hdr) + len(payload), r.phase})
		r.mu.Unlock()
	}
	return err
}

func (r *recStream) setPhase(p int) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

func (r *recStream) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.segs)
}

// sizes returns the segment sizes of a phase in order.
func (r *recStream) sizes(phase int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, s := range r.segs {
		if s.phase == phase {
			out = append(out, s.n)
		}
	}
	return out
}

// pair is a client endpoint writing into a server MR.
type pair struct {
	cli, srv *rdmap.Endpoint
	rec      *recStream
	target   *rdmap.MR
	mulpdu   func() int
	imm      uint64
}

const targetSize = 48 << 20

// newPair builds the endpoints over the client's and server's LLP streams.
func newPair(t *testing.T, cs, ss llp.Stream, mulpdu func() int) *pair {
	t.Helper()
	dev := new(rdmap.Device)
	cpd, spd := dev.AllocPD(), dev.AllocPD()
	p := &pair{rec: &recStream{Stream: cs}, mulpdu: mulpdu}
	var err error
	p.cli, err = cpd.NewEndpoint(p.rec, rdmap.EndpointConfig{})
	require.NoError(t, err)
	p.srv, err = spd.NewEndpoint(ss, rdmap.EndpointConfig{})
	require.NoError(t, err)
	p.target, err = spd.Register(make([]byte, targetSize), rdmap.LocalWrite|rdmap.RemoteWrite, rdmap.MROption{Endpoint: p.srv})
	require.NoError(t, err)
	require.NoError(t, p.srv.PostRecv(1, make([]byte, 8)))
	require.NoError(t, p.cli.Start())
	require.NoError(t, p.srv.Start())
	t.Cleanup(func() {
		_ = p.cli.Abort()
		_ = p.srv.Abort()
		<-p.cli.Done()
		<-p.srv.Done()
	})
	return p
}

// write performs an RDMA Write with Immediate Data of data at offset 0 and
// waits until the server has seen the Immediate Data, which RFC 7306 §6
// orders after the Write's placement.
func (p *pair) write(ctx context.Context, data []byte) error {
	p.imm++
	if _, err := p.cli.Do(ctx, rdmap.SendWR{Op: rdmap.WRWriteImm, Local: data, RemoteSTag: p.target.STag(), Imm: p.imm}); err != nil {
		return err
	}
	c, err := p.srv.Config().RecvCQ.Poll(ctx)
	if err != nil {
		return err
	}
	if c.Err != nil {
		return c.Err
	}
	if !c.HasImm || c.Imm != p.imm {
		return errors.New("wrong immediate data")
	}
	return p.srv.PostRecv(p.imm+1, make([]byte, 8))
}

// pionPair sets up SCTP over UDP (pion) from h1 to h2 with path MTU
// tracking on the client.
func pionPair(t *testing.T, topo *netns.Topology, pcfg dplpmtud.ConnConfig) (*pair, pionTransport) {
	t.Helper()
	return pionPairAt(t, topo, topo.H2Addr, pcfg)
}

// pionPairAt is pionPair towards the server address addr (IPv4 or IPv6).
func pionPairAt(t *testing.T, topo *netns.Topology, addr string, pcfg dplpmtud.ConnConfig) (*pair, pionTransport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ln *sctpllp.Listener
	require.NoError(t, netns.In(topo.H2, func() error {
		var err error
		ln, err = sctpllp.Listen(net.JoinHostPort(addr, "0"), sctpllp.Config{Stack: pion.Stack(pion.Config{})})
		return err
	}))
	t.Cleanup(func() { _ = ln.Close() })
	var tr pionTransport
	require.NoError(t, netns.In(topo.H1, func() error {
		var err error
		tr, err = dialPionPMTU(ctx, ln.Addr(), pcfg)
		return err
	}))
	ca := sctpllp.NewAssociation(tr, sctpllp.Config{})
	t.Cleanup(func() { _ = ca.Abort() })
	sa, err := ln.Accept(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sa.Abort() })

	type res struct {
		s   sctpllp.Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := ca.Open(ctx, 1, sctpllp.OpenRequest{})
		ch <- res{s, err}
	}()
	in, err := sa.Accept(ctx)
	require.NoError(t, err)
	ss, err := in.Accept(sctpllp.AcceptParams{})
	require.NoError(t, err)
	r := <-ch
	require.NoError(t, r.err)
	return newPair(t, r.s, ss, r.s.MULPDU), tr
}

// mpaPair sets up MPA over TCP from h1 to h2.
func mpaPair(t *testing.T, topo *netns.Topology) (*pair, *mpa.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ln net.Listener
	require.NoError(t, netns.In(topo.H2, func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(topo.H2Addr, "0"))
		return err
	}))
	t.Cleanup(func() { _ = ln.Close() })
	type res struct {
		c   *mpa.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			ch <- res{nil, err}
			return
		}
		c, err := mpa.Server(ctx, nc, &mpa.Config{})
		ch <- res{c, err}
	}()
	var cc *mpa.Conn
	require.NoError(t, netns.In(topo.H1, func() error {
		var err error
		cc, err = mpa.Dial(ctx, "tcp", ln.Addr().String(), &mpa.Config{})
		return err
	}))
	r := <-ch
	require.NoError(t, r.err)
	return newPair(t, cc, r.c, cc.MULPDU), cc
}

// tcpMSS reads TCP_MAXSEG of the MPA connection.
func tcpMSS(t *testing.T, c *mpa.Conn) int {
	t.Helper()
	tc, ok := c.NetConn().(*net.TCPConn)
	require.True(t, ok)
	rc, err := tc.SyscallConn()
	require.NoError(t, err)
	mss, err := dplpmtud.TCPMaxSeg(rc)
	require.NoError(t, err)
	return mss
}

// waitPMTU waits until the pion client's tracked path MTU is want and the
// search is complete.
func waitPMTU(t *testing.T, tr pionTransport, want int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.Eventually(t, func() bool {
		s, _ := tr.PathMTU()
		return s.PMTU == want && tr.PMTUConn().ProberState() == dplpmtud.StateSearchComplete
	}, within, 5*time.Millisecond, "path MTU never reached %d: %+v state %v", want, tr.PMTUConn().Stats(), tr.PMTUConn().ProberState())
	return time.Since(start)
}

func fill(b []byte, seed byte) {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}

func maxOf(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
