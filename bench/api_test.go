package bench_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/secure"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
	"github.com/sctp-rdma/sctp-rdma/transport"
	"github.com/stretchr/testify/require"
)

// depth is the work requests each benchmark keeps in flight, as
// perftest's -t (its default is 128 for bandwidth tests).
const depth = 16

// peer is a running listener whose every stream registers one region the
// client may Write and Read, advertised (STag, tagged offset) in a Send
// when the client asks: RFC 5040 leaves the exchange to the ULP.
type peer struct {
	ln   *transport.Listener
	stop context.CancelFunc
	done chan error
}

func startPeer(tb testing.TB, m mode, size int) *peer {
	tb.Helper()
	ln, err := transport.Listen(m.server, "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &peer{ln: ln, stop: stop, done: make(chan error, 1)}
	regions := make(chan *rdmap.MR, 1)
	h := &transport.HandlerFuncs{
		OnPrepare: func(ep *rdmap.Endpoint) error {
			mr, err := ep.PD().Register(make([]byte, size), rdmap.RemoteRead|rdmap.RemoteWrite)
			if err != nil {
				return err
			}
			regions <- mr
			return ep.PostRecv(1, make([]byte, 16)) // the client's request
		},
		OnServe: func(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
			mr := <-regions
			if _, err := ep.Config().RecvCQ.Poll(ctx); err != nil {
				return
			}
			adv := binary.BigEndian.AppendUint32(nil, mr.STag())
			adv = binary.BigEndian.AppendUint64(adv, mr.BaseTO())
			if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: adv}); err != nil {
				return
			}
			<-ctx.Done()
		},
	}
	dev := new(rdmap.Device)
	go func() { p.done <- ln.Serve(ctx, dev.AllocPD(), h) }()
	return p
}

func (p *peer) close(tb testing.TB) {
	p.stop()
	if err := <-p.done; err != nil {
		tb.Error(err)
	}
}

// dialAdvert opens one stream to p and learns where its region is.
func dialAdvert(ctx context.Context, tb testing.TB, m mode, p *peer) (*transport.Client, uint32, uint64) {
	tb.Helper()
	cl, err := transport.Dial(ctx, m.client, p.ln.Addr(), 1, new(rdmap.Device).AllocPD(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	ep := cl.Endpoints[0]
	buf := make([]byte, 16)
	if err := ep.PostRecv(1, buf); err != nil {
		tb.Fatal(err)
	}
	if _, err := ep.Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: []byte("where?")}); err != nil {
		tb.Fatal(err)
	}
	if c, err := ep.Config().RecvCQ.Poll(ctx); err != nil || c.Length != 12 {
		tb.Fatalf("advert: %v (length %d)", err, c.Length)
	}
	return cl, binary.BigEndian.Uint32(buf), binary.BigEndian.Uint64(buf[4:])
}

// run posts n copies of wr, at most depth in flight, and waits for every
// completion: the bandwidth loop of perftest's ib_write_bw and
// ib_read_bw.
func run(ctx context.Context, tb testing.TB, ep *rdmap.Endpoint, wr rdmap.SendWR, n int) {
	cq := ep.Config().SendCQ
	posted, done := 0, 0
	for done < n {
		for posted < n && posted-done < depth {
			wr.ID = uint64(posted)
			if _, err := ep.PostSend(wr); err != nil {
				tb.Fatal(err)
			}
			posted++
		}
		c, err := cq.Poll(ctx)
		if err == nil {
			err = c.Err
		}
		if err != nil {
			tb.Fatal(err)
		}
		done++
	}
}

// session is one client stream to a fresh peer, and the work request of
// op that moves size octets between it and the peer's region.
func session(ctx context.Context, tb testing.TB, m mode, op rdmap.WorkType, size int) (*rdmap.Endpoint, rdmap.SendWR) {
	p := startPeer(tb, m, size)
	tb.Cleanup(func() { p.close(tb) })
	cl, stag, to := dialAdvert(ctx, tb, m, p)
	tb.Cleanup(func() {
		if err := cl.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
			tb.Error(err)
		}
	})
	ep := cl.Endpoints[0]
	wr := rdmap.SendWR{Op: op, RemoteSTag: stag, RemoteTO: to}
	if op == rdmap.WRRead {
		sink, err := ep.PD().Register(make([]byte, size), rdmap.LocalWrite)
		if err != nil {
			tb.Fatal(err)
		}
		wr.Sink, wr.Length = sink, uint32(size)
	} else {
		wr.Local = make([]byte, size)
	}
	return ep, wr
}

// mode is an LLP as a user configures it: the client's and the server's
// options.
type mode struct {
	name           string
	client, server transport.Options
}

func plain(llp string) mode {
	return mode{llp, transport.Options{LLP: llp}, transport.Options{LLP: llp}}
}

var plainModes = []mode{plain(transport.SCTPNative), plain(transport.SCTPPion), plain(transport.MPA)}

// secureModes are sctp-native inside DTLS (RFC 8261) and MPA inside TLS
// 1.3, with throwaway self-signed certificates and mutual
// authentication.
func secureModes(tb testing.TB) []mode {
	tb.Helper()
	sf, cf, err := secure.GenerateSelfSigned(tb.TempDir(), "sctp-rdma.bench")
	if err != nil {
		tb.Fatal(err)
	}
	sd, e1 := sf.DTLS(true)
	cd, e2 := cf.DTLS(false)
	st, e3 := sf.TLS(true)
	ct, e4 := cf.TLS(false)
	if err := errors.Join(e1, e2, e3, e4); err != nil {
		tb.Fatal(err)
	}
	return []mode{
		{transport.SCTPNative + "+dtls", transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{DTLS: cd}},
			transport.Options{LLP: transport.SCTPNative, Native: transport.SCTPOptions{DTLS: sd}}},
		{transport.MPA + "+tls", transport.Options{LLP: transport.MPA, MPA: transport.MPAOptions{TLS: ct}},
			transport.Options{LLP: transport.MPA, MPA: transport.MPAOptions{TLS: st}}},
	}
}

func benchmark(b *testing.B, op rdmap.WorkType) {
	for _, m := range append(plainModes, secureModes(b)...) {
		for _, size := range []int{4 << 10, 64 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB", m.name, size>>10), func(b *testing.B) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				ep, wr := session(ctx, b, m, op, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				run(ctx, b, ep, wr, b.N)
				b.StopTimer()
			})
		}
	}
}

// TestBenchmarkLoopMovesData runs the benchmarks' loop on each mode: what
// the Writes placed in the peer's region, a Read brings back intact.
func TestBenchmarkLoopMovesData(t *testing.T) {
	for _, m := range append(plainModes, secureModes(t)...) {
		t.Run(m.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			const size = 64 << 10
			ep, wr := session(ctx, t, m, rdmap.WRWrite, size)
			for i := range wr.Local {
				wr.Local[i] = byte(i * 7)
			}
			run(ctx, t, ep, wr, 3*depth)
			sink, err := ep.PD().Register(make([]byte, size), rdmap.LocalWrite)
			require.NoError(t, err)
			rd := rdmap.SendWR{Op: rdmap.WRRead, RemoteSTag: wr.RemoteSTag, RemoteTO: wr.RemoteTO, Sink: sink, Length: size}
			run(ctx, t, ep, rd, 1)
			require.True(t, bytes.Equal(sink.Bytes(), wr.Local), "the Read brought back other octets than the Writes placed")
		})
	}
}

// BenchmarkWrite is RDMA Write (RFC 5040 §4.3) into the peer's region.
func BenchmarkWrite(b *testing.B) { benchmark(b, rdmap.WRWrite) }

// BenchmarkRead is RDMA Read (RFC 5040 §4.4) of the peer's region into a
// local sink.
func BenchmarkRead(b *testing.B) { benchmark(b, rdmap.WRRead) }
