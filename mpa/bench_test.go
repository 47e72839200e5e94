package mpa

import (
	"fmt"
	"github.com/sctp-rdma/sctp-rdma/internal/iwarpwire"
	"testing"

	"github.com/stretchr/testify/assert"
)

// signalHandler signals each delivered segment without allocating.
type signalHandler struct {
	got    chan struct{}
	closed chan error
}

func newSignalHandler() *signalHandler {
	return &signalHandler{got: make(chan struct{}, 1024), closed: make(chan error, 1)}
}

func (h *signalHandler) HandleSegment([]byte) error { h.got <- struct{}{}; return nil }
func (h *signalHandler) HandleClosed(err error)     { h.closed <- err }

// TestSteadyStateNoAllocs: sending a segment and receiving it (framing,
// CRC, Markers, delivery) allocates nothing once the Conn is running.
func TestSteadyStateNoAllocs(t *testing.T) {
	for _, tc := range []struct {
		markers bool
		size    int // under and over gatherThreshold: copy and writev paths
	}{{false, 1000}, {false, 20000}, {true, 1000}, {true, 20000}} {
		t.Run(fmt.Sprintf("markers=%t/size=%d", tc.markers, tc.size), func(t *testing.T) {
			cli, srv := pair(t, &Config{Markers: tc.markers}, &Config{Markers: tc.markers})
			h := newSignalHandler()
			srv.Start(h)
			cli.Start(newSignalHandler())
			hdr, payload := make([]byte, 18), make([]byte, min(tc.size, cli.MULPDU())-18)
			allocs := testing.AllocsPerRun(200, func() {
				if err := cli.SendSegment(hdr, payload); err != nil {
					t.Fatal(err)
				}
				<-h.got
			})
			assert.Zero(t, allocs)
		})
	}
}

// BenchmarkFPDUFraming frames a ULPDU into an FPDU and parses it back
// (CRC32c both ways), with and without Markers.
func BenchmarkFPDUFraming(b *testing.B) {
	for _, size := range []int{1024, iwarpwire.MPAMaxULPDU} {
		for _, mk := range []bool{false, true} {
			b.Run(fmt.Sprintf("ulpdu=%d/markers=%t", size, mk), func(b *testing.B) {
				ulpdu := make([]byte, size)
				wire := make([]byte, 0, maxWireLen)
				dst := make([]byte, 0, maxWireLen)
				pos := uint64(0)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					f := FPDU{ULPDU: ulpdu, Pos: pos, Markers: mk, CRC: true}
					wire = f.append(wire[:0])
					if _, _, err := ParseFPDU(wire, pos, mk, true, dst); err != nil {
						b.Fatal(err)
					}
					pos += uint64(len(wire))
				}
			})
		}
	}
}

// BenchmarkConnThroughput measures segments sent by an Initiator and
// delivered by a Responder over loopback TCP (allocations of both sides
// counted).
func BenchmarkConnThroughput(b *testing.B) {
	for _, size := range []int{1024, 16384, iwarpwire.MPAMaxULPDU} { // capped at MULPDU (loopback EMSS)
		for _, mk := range []bool{false, true} {
			b.Run(fmt.Sprintf("seg=%d/markers=%t", size, mk), func(b *testing.B) {
				cli, srv := pair(b, &Config{Markers: mk}, &Config{Markers: mk})
				h := newSignalHandler()
				srv.Start(h)
				cli.Start(newSignalHandler())
				n := min(size, cli.MULPDU())
				hdr, payload := make([]byte, 14), make([]byte, n-14)
				done := make(chan struct{})
				b.SetBytes(int64(n))
				b.ReportAllocs()
				b.ResetTimer()
				go func() {
					for range b.N {
						<-h.got
					}
					close(done)
				}()
				for range b.N {
					if err := cli.SendSegment(hdr, payload); err != nil {
						b.Fatal(err)
					}
				}
				<-done
				b.StopTimer()
				_ = cli.Abort()
				_ = srv.Abort()
				<-cli.Done()
				<-srv.Done()
			})
		}
	}
}
