//go:build linux

package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/netem"
	"github.com/sctp-rdma/sctp-rdma/mpa"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	nsctp "github.com/sctp-rdma/sctp-rdma/sctp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/native"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/pion"
	"github.com/sctp-rdma/sctp-rdma/streams"
)

// profiles are the impairments of TestImpairedLink, each run on its own.
var profiles = []impairment{
	{"Loss3", netem.Profile{Loss: 0.03}},
	{"Reorder25", netem.Profile{Delay: 10 * time.Millisecond, Reorder: 0.25, ReorderCorr: 0.5}},
	{"Duplicate2", netem.Profile{Duplicate: 0.02, Delay: time.Millisecond}},
	{"Delay10Jitter5", netem.Profile{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}},
	{"Mixed", netem.Profile{Loss: 0.01, Duplicate: 0.01, Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond, Reorder: 0.1, ReorderCorr: 0.25}},
}

// volume is what one endpoint moves by each operation.
type volume struct{ write, read, send int }

const (
	impairStreams = 4
	chunk         = 64 << 10 // Write and Read size
	sendChunk     = 32 << 10 // Send size
	impairLimit   = 60 * time.Second
)

var (
	pionVolume = volume{write: 384 << 10, read: 384 << 10, send: 256 << 10} // × 4 streams
	mpaVolume  = volume{write: 1 << 20, read: 1 << 20, send: 1 << 20}
)

// TestImpairedLink: RDMA Write, Read and Send of a few MB over a lossy,
// reordering, duplicating and delaying link complete with intact data:
// the LLP hides the impairments from DDP as RFC 5041 §3 requires of it
// (reliable, in order per stream, boundaries kept): SCTP retransmission
// plus the DDP-SSN re-sequencing of RFC 5043 §5.2.1 for pion with four
// streams at once, TCP plus the FPDU CRC of RFC 5044 §4.4 for MPA.
func TestImpairedLink(t *testing.T) {
	for _, p := range profiles {
		t.Run(p.Name, func(t *testing.T) {
			t.Run("Pion", func(t *testing.T) { impairedPion(t, p, childPion) })
			t.Run("Native", func(t *testing.T) { impairedPion(t, p, childNative) })
			t.Run("MPA", func(t *testing.T) { impairedMPA(t, p) })
		})
	}
}

// sendLog records, per server endpoint, a hash of the Sends received.
type sendLog struct {
	mu sync.Mutex
	by map[*rdmap.Endpoint]*bytes.Buffer
}

func (s *sendLog) onRecv(ep *rdmap.Endpoint, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by[ep] == nil {
		s.by[ep] = new(bytes.Buffer)
	}
	s.by[ep].Write(b)
}

// sums returns the sorted SHA-256 sums of what each endpoint received, once
// want endpoints have received n octets each.
func (s *sendLog) sums(n, want int) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.by {
		if b.Len() != n {
			return nil, false
		}
		out = append(out, fmt.Sprintf("%x", sha256.Sum256(b.Bytes())))
	}
	sort.Strings(out)
	return out, len(out) == want
}

func impairServer(t *testing.T, memLen int, log *sendLog) *server {
	t.Helper()
	srv, err := newServer(serverOptions{MemLen: memLen, Recvs: 64, RecvLen: sendChunk, OnRecv: log.onRecv})
	require.NoError(t, err)
	return srv
}

func impairedPion(t *testing.T, p impairment, stack string) {
	leakCheck(t)
	l := newLink(t, p)
	log := &sendLog{by: map[*rdmap.Endpoint]*bytes.Buffer{}}
	srv := impairServer(t, impairStreams*pionVolume.write, log)
	var ln *sctpllp.Listener
	require.NoError(t, l.inB(func() error {
		var err error
		ln, err = sctpllp.Listen(net.JoinHostPort(l.addrB, "0"), impairedConfig(stack))
		return err
	}))
	ctx, cancel := context.WithTimeout(context.Background(), impairLimit)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, err := ln.Accept(ctx)
		_ = ln.Close()
		if err != nil {
			return
		}
		mgr := streams.New(a, srv.pd, streamsConfig(64))
		_ = srv.serveStreams(ctx, mgr)
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = mgr.Close(cctx)
		ccancel()
	}()
	t.Cleanup(func() {
		cancel()
		_ = ln.Close()
		wg.Wait()
		srv.abortAll()
	})
	mgr := dialPion(t, ctx, ln.Addr(), impairedConfig(stack), l.inA)
	start := time.Now()
	var twg sync.WaitGroup
	sums := make([]string, impairStreams)
	for i := range impairStreams {
		st, err := mgr.Open(ctx, uint16(i+1), streams.OpenOptions{})
		require.NoError(t, err)
		adv, err := parseAdvert(st.Session.Params().PeerPrivateData)
		require.NoError(t, err)
		twg.Add(1)
		go func() {
			defer twg.Done()
			sums[i] = transfer(t, ctx, st.Endpoint, adv, srv, i, impairStreams, pionVolume)
		}()
	}
	twg.Wait()
	checkSends(t, log, sums, pionVolume.send)
	elapsed := time.Since(start)
	l.checkImpaired(t, p)
	total := impairStreams * (pionVolume.write + pionVolume.read + pionVolume.send)
	t.Logf("%s, %s: %d streams, %.1f MB by Write, Read and Send intact in %v (%s)",
		stack, p.Name, impairStreams, float64(total)/(1<<20), elapsed.Round(time.Millisecond), l.backend)
}

// impairedConfig is the SCTP configuration of the impaired-link runs: the
// native stack's RTO.Min lowered to 200 ms (RFC 9260 §16 allows tuning
// it), as pion's is.
func impairedConfig(stack string) sctpllp.Config {
	if stack == childNative {
		return sctpllp.Config{Stack: native.Stack(native.Config{RTO: nsctp.RTOConfig{Min: 200 * time.Millisecond}}, nil)}
	}
	return sctpllp.Config{Stack: pion.Stack(pion.Config{})}
}

func impairedMPA(t *testing.T, p impairment) {
	leakCheck(t)
	l := newLink(t, p)
	log := &sendLog{by: map[*rdmap.Endpoint]*bytes.Buffer{}}
	srv := impairServer(t, mpaVolume.write, log)
	var ln *mpa.Listener
	require.NoError(t, l.inB(func() error {
		var err error
		ln, err = mpa.Listen("tcp", net.JoinHostPort(l.addrB, "0"), srv.mpaConfig())
		return err
	}))
	ctx, cancel := context.WithTimeout(context.Background(), impairLimit)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.serveMPA(ctx, ln, nil)
	}()
	t.Cleanup(func() {
		cancel()
		_ = ln.Close()
		wg.Wait()
		srv.abortAll()
	})
	var conn *mpa.Conn
	require.NoError(t, l.inA(func() error {
		var err error
		conn, err = mpa.Dial(ctx, "tcp", ln.Addr().String(), &mpa.Config{})
		return err
	}))
	adv, err := parseAdvert(conn.Params().PeerPrivateData)
	require.NoError(t, err)
	ep, err := new(rdmap.Device).AllocPD().NewEndpoint(conn, rdmap.EndpointConfig{SQDepth: 1024})
	require.NoError(t, err)
	require.NoError(t, ep.Start())
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = ep.Close(cctx)
		<-ep.Done()
	})
	start := time.Now()
	sum := transfer(t, ctx, ep, adv, srv, 0, 1, mpaVolume)
	checkSends(t, log, []string{sum}, mpaVolume.send)
	elapsed := time.Since(start)
	l.checkImpaired(t, p)
	total := mpaVolume.write + mpaVolume.read + mpaVolume.send
	t.Logf("MPA, %s: %.1f MB by Write, Read and Send intact in %v (%s)",
		p.Name, float64(total)/(1<<20), elapsed.Round(time.Millisecond), l.backend)
}

// transfer moves v with pipelined work requests on ep into and out of slot
// of the server's memory, checks the Writes and Reads byte for byte, and
// returns the SHA-256 of the Sends for checkSends.
func transfer(t *testing.T, ctx context.Context, ep *rdmap.Endpoint, adv advert, srv *server, slot, slots int, v volume) string {
	span := int(adv.write.Length) / slots
	base := slot * span
	wsrc := make([]byte, v.write)
	fill(wsrc, byte(11+slot))
	ssrc := make([]byte, v.send)
	fill(ssrc, byte(101+slot))
	sink, err := ep.PD().Register(make([]byte, v.read), rdmap.LocalWrite)
	if !assert.NoError(t, err) {
		return ""
	}
	n := 0
	post := func(wr rdmap.SendWR) bool {
		n++
		wr.ID = uint64(n)
		return assert.NoError(t, errOf(ep.PostSend(wr)))
	}
	// Interleaved: Write, Send, Read chunks until each volume is moved.
	for w, s, r := 0, 0, 0; w < v.write || s < v.send || r < v.read; {
		if w < v.write && !post(rdmap.SendWR{Op: rdmap.WRWrite, Local: wsrc[w : w+chunk], RemoteSTag: adv.write.STag, RemoteTO: adv.write.TO + uint64(base+w)}) {
			return ""
		}
		w += chunk
		if s < v.send && !post(rdmap.SendWR{Op: rdmap.WRSend, Local: ssrc[s : s+sendChunk]}) {
			return ""
		}
		s += sendChunk
		if r < v.read && !post(rdmap.SendWR{Op: rdmap.WRRead, Sink: sink, SinkOffset: uint64(r), Length: chunk,
			RemoteSTag: adv.read.STag, RemoteTO: adv.read.TO + uint64(base+r)}) {
			return ""
		}
		r += chunk
	}
	for range n {
		c, err := ep.Config().SendCQ.Poll(ctx)
		if !assert.NoError(t, err, "completions within the deadline") {
			return ""
		}
		if !assert.NoError(t, c.Err, "WR %d (%v)", c.WRID, c.Op) {
			return ""
		}
	}
	// A Read after the Writes returns only once they are placed (RFC 5040
	// §5.5: the responder handles the Read Request after the Writes before
	// it), so the target can be compared now.
	probe, err := ep.PD().Register(make([]byte, 8), rdmap.LocalWrite)
	require.NoError(t, err)
	require.NoError(t, errOf(ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRRead, Sink: probe, Length: 8, RemoteSTag: adv.read.STag, RemoteTO: adv.read.TO + uint64(base)})))
	assert.Equal(t, sha256.Sum256(wsrc), sha256.Sum256(srv.target.Bytes()[base:base+v.write]), "RDMA Write data at the peer")
	assert.Equal(t, sha256.Sum256(srv.source.Bytes()[base:base+v.read]), sha256.Sum256(sink.Bytes()), "RDMA Read data")
	return fmt.Sprintf("%x", sha256.Sum256(ssrc))
}

// checkSends waits until every server endpoint received its Sends and
// compares the data.
func checkSends(t *testing.T, log *sendLog, want []string, n int) {
	t.Helper()
	sort.Strings(want)
	var got []string
	require.Eventually(t, func() bool {
		var ok bool
		got, ok = log.sums(n, len(want))
		return ok
	}, 10*time.Second, 5*time.Millisecond, "Sends not all received")
	assert.Equal(t, want, got, "Send data")
}
