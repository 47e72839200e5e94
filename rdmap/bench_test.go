package rdmap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkWrite64K measures RDMA Writes of 64 KiB over llptest with the
// default (Ethernet-sized) and a large MULPDU, up to 16 outstanding.
func BenchmarkWrite64K(b *testing.B) {
	for _, mulpdu := range []int{1448, 65536 + 64} {
		b.Run(map[int]string{1448: "mulpdu1448", 65536 + 64: "mulpdu64K"}[mulpdu], func(b *testing.B) {
			var tgt *MR
			p := newPair(b, EndpointConfig{SQDepth: 64}, EndpointConfig{}, func(p *pair) {
				var err error
				tgt, err = p.pdB.Register(make([]byte, 64<<10), RemoteWrite)
				require.NoError(b, err)
				p.pipeA.SetMULPDU(mulpdu)
				p.pipeB.SetMULPDU(mulpdu)
			})
			src := make([]byte, 64<<10)
			stag := tgt.STag()
			wr := SendWR{Op: WRWrite, Local: src, RemoteSTag: stag}
			const window = 16
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			b.ResetTimer()
			inflight := 0
			for i := 0; i < b.N; i++ {
				if inflight == window {
					if _, err := p.cqA.Poll(b.Context()); err != nil {
						b.Fatal(err)
					}
					inflight--
				}
				if err := p.a.postSend1(wr); err != nil {
					b.Fatal(err)
				}
				inflight++
			}
			for ; inflight > 0; inflight-- {
				if _, err := p.cqA.Poll(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSendRoundTrip64 measures a 64-octet Send ping-pong: A sends, B
// receives and answers, A receives.
func BenchmarkSendRoundTrip64(b *testing.B) {
	p := newPair(b, EndpointConfig{}, EndpointConfig{})
	msg := make([]byte, 64)
	bufA, bufB := make([]byte, 64), make([]byte, 64)
	require.NoError(b, p.a.PostRecv(0, bufA))
	require.NoError(b, p.b.PostRecv(0, bufB))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < b.N; i++ {
			if _, err := p.rcqB.Poll(b.Context()); err != nil {
				return
			}
			if p.b.PostRecv(0, bufB) != nil || p.b.postSend1(SendWR{Op: WRSend, Local: msg}) != nil {
				return
			}
			if _, err := p.cqB.Poll(b.Context()); err != nil {
				return
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.a.postSend1(SendWR{Op: WRSend, Local: msg}); err != nil {
			b.Fatal(err)
		}
		if _, err := p.rcqA.Poll(b.Context()); err != nil {
			b.Fatal(err)
		}
		if err := p.a.PostRecv(0, bufA); err != nil {
			b.Fatal(err)
		}
		if _, err := p.cqA.Poll(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	<-done
}
