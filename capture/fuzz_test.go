package capture

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/sctp-rdma/sctp-rdma/internal/pcapread"
)

// FuzzReadPackets: any file content is read without a panic.
func FuzzReadPackets(f *testing.F) {
	var b bytes.Buffer
	w, err := NewWriter(&b)
	if err != nil {
		f.Fatal(err)
	}
	src, dst := netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("[::1]:2")
	w.recordUDP(src, dst, []byte("x"))
	w.recordTCP(dst, dst, 1, 2, tcpSYN, nil)
	w.SCTP(src, src).Record(true, 1, 16, true, []byte("seg"))
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	if siw, err := os.ReadFile(filepath.Join("..", "mpa", "testdata", "rping-siw.pcap")); err == nil {
		f.Add(siw[:min(len(siw), 4096)])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pkts, _ := pcapread.Read(bytes.NewReader(data))
		_ = pcapread.TCPStreams(pkts)
	})
}

// BenchmarkPacketConnWrite: 1400-octet datagrams over loopback UDP, plain
// and through the recorder (to a file).
func BenchmarkPacketConnWrite(b *testing.B) {
	for _, rec := range []bool{false, true} {
		name := "plain"
		if rec {
			name = "recorded"
		}
		b.Run(name, func(b *testing.B) {
			a := udpSocketB(b)
			sink := udpSocketB(b)
			b.SetBytes(1400)
			b.ReportAllocs()
			var conn net.PacketConn = a
			if rec {
				w, err := create(filepath.Join(b.TempDir(), "b.pcapng"))
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				conn = w.wrapPacketConn(a)
			}
			buf := make([]byte, 1400)
			to := sink.LocalAddr()
			b.ResetTimer()
			for range b.N {
				if _, err := conn.WriteTo(buf, to); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func udpSocketB(b *testing.B) net.PacketConn {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}
