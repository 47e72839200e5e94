package harness

import (
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/tools/bench"
	"github.com/sctp-rdma/sctp-rdma/transport"
)

// benchOp measures b.N RDMA operations of size octets over llp and, in the
// same benchmark, the raw LLP moving the same octets, and reports both
// throughputs and their ratio (the targets are measureLLP's rows').
func benchOp(b *testing.B, llp string, t bench.Test, size int) {
	srv, err := startServer(llp)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.stop()
	raw, err := newRaw(llp)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.close()
	total := int64(b.N) * int64(size)
	move := raw.throughput
	if t == bench.TestRead {
		move = raw.reverse // a Read's data goes from server to client
	}
	d, err := move(size, total)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	r, err := rdmaRun(srv, llp, t, size, 1, DefaultDepth, uint64(b.N), false)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	rawG, rdmaG := gbps(total, d), r.Forward.Gbps()
	b.ReportMetric(rawG, "raw-Gbps")
	b.ReportMetric(rdmaG, "rdma-Gbps")
	b.ReportMetric(rdmaG/rawG, "ratio")
}

// benchPing compares a 64-octet Send ping-pong with the raw LLP round trip
// (the targets are measureLLP's rows').
func benchPing(b *testing.B, llp string) {
	srv, err := startServer(llp)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.stop()
	raw, err := newRaw(llp)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.close()
	s, err := raw.rtt(64, b.N)
	if err != nil {
		b.Fatal(err)
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	b.ReportAllocs()
	b.ResetTimer()
	r, err := rdmaRun(srv, llp, bench.TestSend, 64, 1, 1, uint64(b.N), true)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	rawUS := float64(sum.Microseconds()) / float64(b.N)
	rdmaUS := float64(r.Forward.Elapsed.Microseconds()) / float64(b.N)
	b.ReportMetric(rawUS, "raw-µs/rtt")
	b.ReportMetric(rdmaUS, "rdma-µs/rtt")
	b.ReportMetric(rdmaUS/rawUS, "ratio")
}

func BenchmarkWritePion64K(b *testing.B)     { benchOp(b, transport.SCTPPion, bench.TestWrite, 64<<10) }
func BenchmarkReadPion64K(b *testing.B)      { benchOp(b, transport.SCTPPion, bench.TestRead, 64<<10) }
func BenchmarkSendPion64K(b *testing.B)      { benchOp(b, transport.SCTPPion, bench.TestSend, 64<<10) }
func BenchmarkWriteNative64K(b *testing.B)   { benchOp(b, transport.SCTPNative, bench.TestWrite, 64<<10) }
func BenchmarkReadNative64K(b *testing.B)    { benchOp(b, transport.SCTPNative, bench.TestRead, 64<<10) }
func BenchmarkSendNative64K(b *testing.B)    { benchOp(b, transport.SCTPNative, bench.TestSend, 64<<10) }
func BenchmarkPingPongNative64(b *testing.B) { benchPing(b, transport.SCTPNative) }
func BenchmarkWriteMPA64K(b *testing.B)      { benchOp(b, transport.MPA, bench.TestWrite, 64<<10) }
func BenchmarkReadMPA64K(b *testing.B)       { benchOp(b, transport.MPA, bench.TestRead, 64<<10) }
func BenchmarkSendMPA64K(b *testing.B)       { benchOp(b, transport.MPA, bench.TestSend, 64<<10) }
func BenchmarkPingPongPion64(b *testing.B)   { benchPing(b, transport.SCTPPion) }
func BenchmarkPingPongMPA64(b *testing.B)    { benchPing(b, transport.MPA) }
