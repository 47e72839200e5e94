package sctp

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// benchLink is a loopback association whose server end counts the
// messages it receives.
type benchLink struct {
	cli, srv  *Association
	got, want atomic.Int64
	done      chan struct{}
}

// newBenchLink connects two ends in this process with cfg (nil: the
// defaults) and starts both.
func newBenchLink(b *testing.B, cfg *Config) *benchLink {
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
	cli, err := Dial(ctx, "udp4", l.Addr().String(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	srv := <-acc
	if srv == nil {
		b.Fatal("no association accepted")
	}
	return startBenchLink(b, ctx, cli, srv)
}

// startBenchLink waits for PLPMTUD on both ends and starts them, the
// server counting what it receives.
func startBenchLink(b *testing.B, ctx context.Context, cli, srv *Association) *benchLink {
	b.Helper()
	// RFC 8899 probing over loopback takes two round trips: measure at
	// the packet size it reaches.
	for _, a := range []*Association{cli, srv} {
		for s := a.Stats().PLPMTUD.State; s != "off" && s != "search-complete"; s = a.Stats().PLPMTUD.State {
			if ctx.Err() != nil {
				b.Fatalf("PLPMTUD: %+v", a.Stats().PLPMTUD)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	k := &benchLink{cli: cli, srv: srv, done: make(chan struct{}, 1)}
	k.want.Store(-1)
	srv.Start(func(uint16, uint32, []byte) {
		if k.got.Add(1) == k.want.Load() {
			k.done <- struct{}{}
		}
	}, func(error) {})
	cli.Start(func(uint16, uint32, []byte) {}, func(error) {})
	b.Cleanup(func() { _ = cli.Close(); _ = srv.Abort() })
	return k
}

// warmed waits for n messages of a warm-up (pools, window) and starts
// the count of the measurement: want messages.
func (k *benchLink) warmed(n, want int) {
	for k.got.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	k.got.Store(0)
	k.want.Store(int64(want))
}

// measure warms the link with send(warm), then times send(b.N), each
// operation opBytes octets in perOp messages, until they have all
// arrived; started, if not nil, runs just before the timing starts.
func (k *benchLink) measure(b *testing.B, opBytes, perOp, warm int, send func(n int), started func()) {
	send(warm)
	k.warmed(warm*perOp, perOp*b.N)
	if started != nil {
		started()
	}
	b.SetBytes(int64(opBytes))
	b.ReportAllocs()
	b.ResetTimer()
	send(b.N)
	k.wait(b)
	b.StopTimer()
}

// wait waits for the messages of the measurement.
func (k *benchLink) wait(b *testing.B) {
	select {
	case <-k.done:
	case <-time.After(60 * time.Second):
		b.Fatalf("%d of %d messages arrived", k.got.Load(), k.want.Load())
	}
}

// BenchmarkAssociationWriteMsg moves b.N messages of each size through a
// loopback association (both ends in this process, one UDP datagram per
// message up to 65,000 octets; 65,536 is two fragments, which DDP never
// sends but a peer may) and reports throughput and allocations per
// message, counted over every goroutine of both ends: the data path
// allocates nothing per packet in the steady state.
func BenchmarkAssociationWriteMsg(b *testing.B) {
	for _, size := range []int{64, 1024, 8192, 65000, 65536} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			k := newBenchLink(b, nil)
			msg := make([]byte, size)
			send := func(n int) {
				for range n {
					if err := k.cli.WriteMsg(1, 16, msg); err != nil {
						b.Fatal(err)
					}
				}
			}
			k.measure(b, size, 1, 2000, send, nil)
			st := k.cli.Stats()
			b.ReportMetric(float64(st.PacketsSent)/float64(b.N+2000), "pkts/msg")
			b.ReportMetric(float64(k.srv.Stats().SACKsSent)/float64(st.PacketsSent), "sacks/pkt")
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
			k := newBenchLink(b, &Config{MTU: 1500, NoOffload: off, offloadLocal: true})
			msg := make([]byte, k.cli.MaxMessage())
			send := func(n int) {
				for i := range n {
					if err := writeGrouped(k.cli, msg, i, n); err != nil {
						b.Fatal(err)
					}
				}
			}
			var s0, r0 Stats
			k.measure(b, len(msg), 1, 20000, send, func() { s0, r0 = k.cli.Stats(), k.srv.Stats() })
			s1, r1 := k.cli.Stats(), k.srv.Stats()
			pkts := float64(s1.PacketsSent - s0.PacketsSent)
			b.ReportMetric(pkts/float64(max(s1.OffloadSends-s0.OffloadSends, 1)), "pkts/gso-send")
			b.ReportMetric(float64(r1.PacketsReceived-r0.PacketsReceived)/float64(max(r1.OffloadReceives-r0.OffloadReceives, 1)), "pkts/gro-read")
			b.ReportMetric(float64(r1.SACKsSent-r0.SACKsSent)/pkts, "sacks/pkt")
			b.ReportMetric(float64(s1.Retransmits-s0.Retransmits)/pkts, "rtx/pkt")
		})
	}
}

// writeGrouped writes message i of n as the segments of 64 KiB DDP
// messages at MTU 1500 go: WriteMsgMore but for every 44th and the last.
func writeGrouped(a *Association, m []byte, i, n int) error {
	if i%44 == 43 || i == n-1 {
		return a.WriteMsg(1, 16, m)
	}
	return a.WriteMsgMore(1, 16, m)
}

// BenchmarkAssociationSegments64K sends 64 KiB over loopback as DDP does:
// a message of MaxMessage octets and one of the rest (WriteMsgMore, then
// WriteMsg), with the two packets leaving by one sendmmsg and without
// (Config.NoOffload).
func BenchmarkAssociationSegments64K(b *testing.B) {
	for _, off := range []bool{false, true} {
		b.Run(fmt.Sprintf("nooffload=%v", off), func(b *testing.B) {
			k := newBenchLink(b, &Config{NoOffload: off})
			msg := make([]byte, 64<<10)
			n := k.cli.MaxMessage()
			send := func(count int) {
				for range count {
					if err := k.cli.WriteMsgMore(1, 16, msg[:n]); err != nil {
						b.Fatal(err)
					}
					if err := k.cli.WriteMsg(1, 16, msg[n:]); err != nil {
						b.Fatal(err)
					}
				}
			}
			var s0 Stats
			k.measure(b, len(msg), 2, 2000, send, func() { s0 = k.cli.Stats() })
			s1 := k.cli.Stats()
			b.ReportMetric(float64(s1.PacketsSent-s0.PacketsSent)/float64(max(s1.OffloadSends-s0.OffloadSends, 1)), "pkts/send")
		})
	}
}

// BenchmarkAssociationFragmentedMTU1500 is the raw API at an MTU of 1500:
// WriteMsg of 64 KiB messages, which the stack fragments (RFC 9260 §6.9)
// into 45 packets, beside WriteMsg of messages of one full packet each,
// both through a loopback association with segmentation and receive
// offload (issue 47: the fragmented rate should be the one-packet rate).
func BenchmarkAssociationFragmentedMTU1500(b *testing.B) {
	for _, name := range []string{"one-packet", "64KiB"} {
		b.Run(name, func(b *testing.B) {
			k := newBenchLink(b, &Config{MTU: 1500, offloadLocal: true})
			size := k.cli.MaxMessage()
			if name == "64KiB" {
				size = 64 << 10
			}
			msg := make([]byte, size)
			send := func(n int) {
				for range n {
					if err := k.cli.WriteMsg(1, 16, msg); err != nil {
						b.Fatal(err)
					}
				}
			}
			k.measure(b, size, 1, max(2000, 2<<20/size), send, nil)
		})
	}
}
