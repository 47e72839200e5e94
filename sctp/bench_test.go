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
	for _, size := range []int{64, 1024, 8192, 65000, 65536} {
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

// BenchmarkAssociationMTU1500 moves messages of one full packet each at an
// MTU of 1500 through a loopback association, 44 at a time as a DDP
// message of 64 KiB is sent (WriteMsgMore for all but the last), with UDP
// segmentation and receive offload and without (Config.NoOffload): the
// system calls per packet are what limits SCTP over UDP at this MTU.
func BenchmarkAssociationMTU1500(b *testing.B) {
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("nooffload=%v", off), func(b *testing.B) {
			cfg := &Config{MTU: 1500, NoOffload: off, offloadLocal: true}
			cli, srv := benchPair(b, cfg)
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
			msg := make([]byte, cli.MaxMessage())
			const burst = 44
			send := func(n int) {
				for i := range n {
					var err error
					if i%burst == burst-1 || i == n-1 {
						err = cli.WriteMsg(1, 16, msg)
					} else {
						err = cli.WriteMsgMore(1, 16, msg)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			send(20000) // warm the pools and the window
			for got.Load() < 20000 {
				time.Sleep(time.Millisecond)
			}
			got.Store(0)
			want.Store(int64(b.N))
			s0, r0 := cli.Stats(), srv.Stats()
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			b.ResetTimer()
			send(b.N)
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				b.Fatalf("%d of %d messages arrived", got.Load(), b.N)
			}
			b.StopTimer()
			s1, r1 := cli.Stats(), srv.Stats()
			pkts := float64(s1.PacketsSent - s0.PacketsSent)
			b.ReportMetric(pkts/float64(max(s1.OffloadSends-s0.OffloadSends, 1)), "pkts/gso-send")
			b.ReportMetric(float64(r1.PacketsReceived-r0.PacketsReceived)/float64(max(r1.OffloadReceives-r0.OffloadReceives, 1)), "pkts/gro-read")
			b.ReportMetric(float64(r1.SACKsSent-r0.SACKsSent)/pkts, "sacks/pkt")
			b.ReportMetric(float64(s1.Retransmits-s0.Retransmits)/pkts, "rtx/pkt")
			_ = cli.Close()
			_ = srv.Abort()
		})
	}
}

// benchPair returns the two ends of an association over loopback.
func benchPair(b *testing.B, cfg *Config) (cli, srv *Association) {
	b.Helper()
	l, err := Listen("udp4", "127.0.0.1:0", cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acc := make(chan *Association, 1)
	go func() { a, _ := l.Accept(ctx); acc <- a }()
	cli, err = Dial(ctx, "udp4", l.Addr().String(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	srv = <-acc
	if srv == nil {
		b.Fatal("no association accepted")
	}
	return cli, srv
}

// BenchmarkAssociationSegments64K sends 64 KiB over loopback as DDP does:
// a message of MaxMessage octets and one of the rest (WriteMsgMore, then
// WriteMsg), with the two packets leaving by one sendmmsg and without
// (Config.NoOffload).
func BenchmarkAssociationSegments64K(b *testing.B) {
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("nooffload=%v", off), func(b *testing.B) {
			cli, srv := benchPair(b, &Config{NoOffload: off})
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
			msg := make([]byte, 64<<10)
			k := cli.MaxMessage()
			send := func(n int) {
				for range n {
					if err := cli.WriteMsgMore(1, 16, msg[:k]); err != nil {
						b.Fatal(err)
					}
					if err := cli.WriteMsg(1, 16, msg[k:]); err != nil {
						b.Fatal(err)
					}
				}
			}
			send(2000)
			for got.Load() < 4000 {
				time.Sleep(time.Millisecond)
			}
			got.Store(0)
			want.Store(int64(2 * b.N))
			s0 := cli.Stats()
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			b.ResetTimer()
			send(b.N)
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				b.Fatalf("%d of %d messages arrived", got.Load(), 2*b.N)
			}
			b.StopTimer()
			s1 := cli.Stats()
			b.ReportMetric(float64(s1.PacketsSent-s0.PacketsSent)/float64(max(s1.OffloadSends-s0.OffloadSends, 1)), "pkts/send")
			_ = cli.Close()
			_ = srv.Abort()
		})
	}
}
