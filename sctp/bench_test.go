package sctp

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAssociationWriteMsg moves b.N messages of each size through a
// loopback association (both ends in this process, one UDP datagram per
// message up to 64 KiB) and reports throughput and allocations per
// message, counted over every goroutine of both ends: the data path
// allocates nothing per packet in the steady state.
func BenchmarkAssociationWriteMsg(b *testing.B) {
	for _, size := range []int{64, 1024, 8192, 65000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			l, err := Listen("udp4", "127.0.0.1:0", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			acc := make(chan *Association, 1)
			go func() { a, _ := l.Accept(ctx); acc <- a }()
			cli, err := Dial(ctx, "udp4", l.Addr().String(), nil)
			if err != nil {
				b.Fatal(err)
			}
			srv := <-acc
			var got atomic.Int64
			done := make(chan struct{}, 1)
			want := atomic.Int64{}
			want.Store(-1)
			srv.Start(func(_ uint16, _ uint32, p []byte) {
				if got.Add(1) == want.Load() {
					done <- struct{}{}
				}
			}, func(error) {})
			cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
			msg := make([]byte, size)
			// Warm the pools and the window.
			for range 2000 {
				if err := cli.WriteMsg(1, 16, msg); err != nil {
					b.Fatal(err)
				}
			}
			for got.Load() < 2000 {
				time.Sleep(time.Millisecond)
			}
			got.Store(0)
			want.Store(int64(b.N))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := cli.WriteMsg(1, 16, msg); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				b.Fatalf("%d of %d messages arrived", got.Load(), b.N)
			}
			b.StopTimer()
			st := cli.Stats()
			b.ReportMetric(float64(st.PacketsSent)/float64(b.N+2000), "pkts/msg")
			b.ReportMetric(float64(srv.Stats().SACKsSent)/float64(st.PacketsSent), "sacks/pkt")
			_ = cli.Close()
			_ = srv.Abort()
		})
	}
}
