package native

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// BenchmarkDTLS compares SCTP over DTLS (RFC 8261) with what pion/dtls
// moves by itself on the same loopback, the same configurations (mutual
// certificates) and records of the largest packet this mode sends
// (dtlsMaxPacket): the ceiling the dependency sets on the mode.
//
//	go test -run '^$' -bench BenchmarkDTLS -count 5 ./sctpllp/native/
func BenchmarkDTLS(b *testing.B) {
	scfg, ccfg := dtlsPair(b)
	b.Run("pion-records-alone", func(b *testing.B) {
		srv, cli := pionPair(b, scfg, ccfg)
		var got atomic.Int64
		go func() {
			buf := make([]byte, 1<<16)
			for {
				n, err := srv.Read(buf)
				if err != nil {
					return
				}
				got.Add(int64(n))
			}
		}()
		rec := make([]byte, dtlsMaxPacket)
		b.SetBytes(int64(len(rec)))
		b.ResetTimer()
		for b.Loop() {
			if _, err := cli.Write(rec); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		want := int64(b.N) * int64(len(rec))
		deadline := time.Now().Add(time.Second)
		for got.Load() < want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		// UDP beneath DTLS drops what the receiver does not keep up with.
		b.ReportMetric(float64(got.Load())/float64(want), "delivered")
	})
	b.Run("sctp-over-dtls-64KiB", func(b *testing.B) {
		ln, err := listenDTLS("127.0.0.1:0", Config{}, scfg)
		require.NoError(b, err)
		defer ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		acc := make(chan backend.Transport, 1)
		go func() {
			tr, err := ln.Accept(ctx)
			if err == nil {
				acc <- tr
			}
			close(acc)
		}()
		cl, err := dialDTLS(ctx, ln.Addr().String(), Config{}, ccfg)
		require.NoError(b, err)
		sv, ok := <-acc
		require.True(b, ok, "accepted")
		defer func() { _ = cl.Abort(); _ = sv.Abort() }()
		var got atomic.Int64
		sv.Start(func(_ uint16, _ uint32, p []byte) { got.Add(int64(len(p))) }, func(error) {})
		cl.Start(func(uint16, uint32, []byte) {}, func(error) {})
		msg := make([]byte, 64<<10)
		b.SetBytes(int64(len(msg)))
		b.ResetTimer()
		for b.Loop() {
			if err := cl.WriteMsg(1, backend.PPIDSegment, msg); err != nil {
				b.Fatal(err)
			}
		}
		want := int64(b.N) * int64(len(msg))
		for got.Load() < want {
			time.Sleep(100 * time.Microsecond)
		}
		b.StopTimer()
	})
}

// pionPair returns a DTLS connection pair over two connected loopback
// UDP sockets, handshaken.
func pionPair(b *testing.B, scfg, ccfg *dtls.Config) (srv, cli *dtls.Conn) {
	b.Helper()
	lo := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	su, err := net.ListenUDP("udp", lo)
	require.NoError(b, err)
	cu, err := net.DialUDP("udp", nil, su.LocalAddr().(*net.UDPAddr))
	require.NoError(b, err)
	_ = su.Close()
	su, err = net.DialUDP("udp", su.LocalAddr().(*net.UDPAddr), cu.LocalAddr().(*net.UDPAddr))
	require.NoError(b, err)
	for _, c := range []*net.UDPConn{su, cu} {
		_ = c.SetReadBuffer(dtlsSocketBuffer)
		_ = c.SetWriteBuffer(dtlsSocketBuffer)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	srv, err = dtls.Server(connectedPacketConn{su}, cu.LocalAddr(), scfg)
	require.NoError(b, err)
	go func() { done <- srv.HandshakeContext(ctx) }()
	cli, err = dtls.Client(connectedPacketConn{cu}, su.LocalAddr(), ccfg)
	require.NoError(b, err)
	require.NoError(b, cli.HandshakeContext(ctx))
	require.NoError(b, <-done)
	b.Cleanup(func() { _ = cli.Close(); _ = srv.Close() })
	return srv, cli
}
