//go:build linux

package sctp

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
)

// BenchmarkMultihomingDualPath moves messages of 64 KiB (fragmented by
// the association) and of one packet from B to A across netns.DualPath's
// veth links at MTU 1500 and 9000: one address each (link 0, the
// connected socket and its UDP_SEGMENT/UDP_GRO runs) against two
// addresses each (the wildcard socket of multihoming, DATA on link 0).
// Root only.
func BenchmarkMultihomingDualPath(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Fatal("needs root: network namespaces")
	}
	for _, mtu := range []int{1500, 9000} {
		d, err := netns.NewDualPath(mtu)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(d.Destroy)
		for _, multi := range []bool{false, true} {
			listen, dial, local := d.AAddr[0], d.AAddr[0], d.BAddr[0]+":0"
			name := "single"
			if multi {
				listen, dial, local = d.AAddr[0]+"/"+d.AAddr[1], d.AAddr[0]+"/"+d.AAddr[1], d.BAddr[0]+"/"+d.BAddr[1]+":0"
				name = "multi"
			}
			for _, size := range []string{"64KiB", "one-packet"} {
				b.Run(fmt.Sprintf("mtu%d/%s/%s", mtu, name, size), func(b *testing.B) {
					k := newBenchLinkNS(b, d, listen, dial, local)
					n := 64 << 10
					if size == "one-packet" {
						n = k.cli.MaxMessage()
					}
					msg := make([]byte, n)
					send := func(n int) {
						for i := range n {
							if err := k.cli.WriteMsg(uint16(i%16), 16, msg); err != nil {
								b.Fatal(err)
							}
						}
					}
					k.measure(b, len(msg), 1, max(200, 8<<20/n), send, nil)
					st := k.cli.Stats()
					b.ReportMetric(float64(st.PacketsSent)/float64(max(st.OffloadSends, 1)), "pkts/offload-send")
				})
			}
		}
	}
}

// newBenchLinkNS is newBenchLink across d: the listener in A on listen,
// the dialer in B to dial from local.
func newBenchLinkNS(b *testing.B, d *netns.DualPath, listen, dial, local string) *benchLink {
	b.Helper()
	cfg := Config{Streams: 16}
	var l *Listener
	if err := netns.In(d.A, func() (err error) { l, err = Listen("udp4", listen+":0", &cfg); return err }); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	port := l.pc.LocalAddr().(*net.UDPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ccfg := cfg
	ccfg.LocalAddr = local
	var cli *Association
	if err := netns.In(d.B, func() (err error) {
		cli, err = Dial(ctx, "udp4", fmt.Sprintf("%s:%d", dial, port), &ccfg)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	srv, err := l.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return startBenchLink(b, ctx, cli, srv)
}
