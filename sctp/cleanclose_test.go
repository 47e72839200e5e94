package sctp

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/sctp/wire"
)

// closingConn is a connected datagram conn (the shape of a DTLS
// connection, RFC 8261) whose Read reports io.EOF, a clean close by the
// peer, in place of the first packet that starts with a SHUTDOWN COMPLETE:
// what pion/dtls did now and then when the peer's close_notify followed
// that packet at once.
type closingConn struct {
	spoofableConn
	closed atomic.Bool
}

func (c *closingConn) Read(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, io.EOF
	}
	n, err := c.spoofableConn.Read(b)
	if err == nil && n > wire.HeaderLen && wire.ChunkType(b[wire.HeaderLen]) == wire.ChunkShutdownComplete {
		c.closed.Store(true)
		return 0, io.EOF
	}
	return n, err
}

// TestCleanCloseAfterShutdownAck_RFC9260_9_2: a connection-oriented
// socket that the peer closes cleanly once this side sent its SHUTDOWN
// ACK ends the association as the SHUTDOWN COMPLETE it stands for would
// (Err nil): the peer closes only after its shutdown, which began with
// every chunk acknowledged. TestNativeDTLSTransportConformance's
// GracefulCloseDelivers saw "socket: EOF" instead, twice in 300 loaded
// runs.
func TestCleanCloseAfterShutdownAck_RFC9260_9_2(t *testing.T) {
	ua, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	ub, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	ca := &spoofableConn{UDPConn: ua, raddr: ub.LocalAddr().(*net.UDPAddr)}
	cb := &closingConn{spoofableConn: spoofableConn{UDPConn: ub, raddr: ua.LocalAddr().(*net.UDPAddr)}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan *Association, 1)
	go func() {
		b, err := AcceptConn(ctx, cb, nil)
		assert.NoError(t, err)
		accepted <- b
	}()
	a, err := DialConn(ctx, ca, nil)
	require.NoError(t, err)
	b := <-accepted
	require.NotNil(t, b)
	a.Start(func(uint16, uint32, []byte) {}, func(error) {})
	b.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, a.WriteMsg(1, 16, []byte("before the shutdown")))

	require.NoError(t, a.Close())
	select {
	case <-b.Done():
	case <-ctx.Done():
		t.Fatal("the peer's association did not end")
	}
	assert.True(t, cb.closed.Load(), "the SHUTDOWN COMPLETE was replaced by a clean close")
	assert.NoError(t, b.Err(), "a clean close after the SHUTDOWN ACK is the end of a graceful shutdown")
	assert.NoError(t, a.Err())
}
