package transport

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/tcpcc"
	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// socketCC reads a socket's TCP_CONGESTION.
func socketCC(t *testing.T, sc syscall.Conn) string {
	t.Helper()
	cc, err := tcpcc.Of(sc)
	require.NoError(t, err)
	return cc
}

// TestMPATCPCongestion: MPAOptions.TCPCongestion reaches the listening
// socket, every connection it accepts and every dialled one; a name the
// kernel does not know fails Listen and Dial with an error naming it.
func TestMPATCPCongestion(t *testing.T) {
	o := Options{LLP: MPA, MPA: MPAOptions{TCPCongestion: "reno"}, PrivateData: []byte("ok")}
	ln, err := Listen(o, "127.0.0.1:0")
	require.NoError(t, err)
	assert.Equal(t, "reno", socketCC(t, ln.p.(*mpaPassive).tcp.(*net.TCPListener)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx, new(rdmap.Device).AllocPD(), echoHandler{}) }()

	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	c, err := Dial(dctx, o, ln.Addr(), 2, new(rdmap.Device).AllocPD(), nil)
	require.NoError(t, err)
	require.Len(t, c.conns, 2)
	for _, mc := range c.conns {
		assert.Equal(t, "reno", socketCC(t, mc.NetConn().(*net.TCPConn)))
	}
	require.NoError(t, c.Close(dctx))

	bad := Options{LLP: MPA, MPA: MPAOptions{TCPCongestion: "no-such-cc"}}
	_, err = Listen(bad, "127.0.0.1:0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"no-such-cc"`)
	_, err = Dial(dctx, bad, ln.Addr(), 1, new(rdmap.Device).AllocPD(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"no-such-cc"`)
	cancel()
	require.NoError(t, <-done)
}
