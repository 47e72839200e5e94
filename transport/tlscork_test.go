package transport

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/secure"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// writeCounter counts the Writes that reach the TCP connection.
type writeCounter struct {
	net.Conn
	writes atomic.Int64
}

func (w *writeCounter) Write(b []byte) (int, error) {
	w.writes.Add(1)
	return w.Conn.Write(b)
}

func tlsConfigs(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	sf, cf, err := secure.GenerateSelfSigned(t.TempDir(), "sctp-rdma.test")
	require.NoError(t, err)
	server, err = sf.TLS(true)
	require.NoError(t, err)
	client, err = cf.TLS(false)
	require.NoError(t, err)
	return server, client
}

// TestTLSConn_OneWritePerFPDU: crypto/tls writes a 64 KiB Write as five
// records; beneath MPA they leave in one system call, intact.
func TestTLSConn_OneWritePerFPDU(t *testing.T) {
	scfg, ccfg := tlsConfigs(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer nc.Close()
		b, _ := io.ReadAll(tlsServer(nc, scfg))
		got <- b
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	wc := &writeCounter{Conn: nc}
	tc := tlsClient(wc, ccfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tc.HandshakeContext(ctx))
	msg := make([]byte, 64<<10)
	for i := range msg {
		msg[i] = byte(i * 13)
	}
	before := wc.writes.Load()
	n, err := tc.Write(msg)
	require.NoError(t, err)
	assert.Equal(t, len(msg), n)
	assert.Equal(t, int64(1), wc.writes.Load()-before, "one write for the five records")
	big := make([]byte, 3*corkMax)
	before = wc.writes.Load()
	_, err = tc.Write(big)
	require.NoError(t, err)
	assert.LessOrEqual(t, wc.writes.Load()-before, int64(4), "a Write beyond corkMax sends as the buffer fills")
	require.NoError(t, tc.Close())
	b := <-got
	require.Len(t, b, len(msg)+len(big))
	assert.Equal(t, msg, b[:len(msg)])
}

// TestMPAOverTLS_NoCRC_RFC5044_4_4: inside TLS both ends ask for no MPA
// CRC (the records' AEAD protects the FPDUs), so none is used, and the
// data still arrives; in the clear CRCs stay on.
func TestMPAOverTLS_NoCRC_RFC5044_4_4(t *testing.T) {
	scfg, ccfg := tlsConfigs(t)
	for _, tc := range []struct {
		name           string
		server, client Options
		crc            bool
	}{
		{"clear", Options{LLP: MPA}, Options{LLP: MPA}, true},
		{"tls", Options{LLP: MPA, MPA: MPAOptions{TLS: scfg}}, Options{LLP: MPA, MPA: MPAOptions{TLS: ccfg}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ln, err := Listen(tc.server, "127.0.0.1:0")
			require.NoError(t, err)
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			recvd := make(chan []byte, 1)
			go func() {
				served <- ln.Serve(sctx, new(rdmap.Device).AllocPD(), &HandlerFuncs{
					OnPrepare: func(ep *rdmap.Endpoint) error { return ep.PostRecv(1, make([]byte, 64<<10)) },
					OnServe: func(ctx context.Context, _ netip.Addr, ep *rdmap.Endpoint) {
						c, err := ep.Config().RecvCQ.Poll(ctx)
						if err == nil {
							recvd <- c.Buf[:c.Length]
						}
						<-ctx.Done()
					}})
			}()
			cl, err := Dial(ctx, tc.client, ln.Addr(), 1, new(rdmap.Device).AllocPD(), nil)
			require.NoError(t, err)
			require.Len(t, cl.conns, 1)
			assert.Equal(t, tc.crc, cl.conns[0].Params().CRC)
			msg := make([]byte, 60<<10)
			for i := range msg {
				msg[i] = byte(i * 7)
			}
			_, err = cl.Endpoints[0].Do(ctx, rdmap.SendWR{Op: rdmap.WRSend, Local: msg})
			require.NoError(t, err)
			select {
			case b := <-recvd:
				assert.Equal(t, msg, b)
			case <-ctx.Done():
				t.Fatal("the Send did not arrive")
			}
			require.NoError(t, cl.Close(ctx))
			stop()
			require.NoError(t, <-served)
		})
	}
}
