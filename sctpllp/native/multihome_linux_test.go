//go:build linux

package native

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/internal/netns"
	"github.com/sctp-rdma/sctp-rdma/sctpllp/backend"
)

// TestMultihomedAddresses: the stack passes multihomed address strings
// through (RFC 9260 §6.4): Listen("A0/A1:port"), and Dial("A0/A1:port")
// with Config.LocalAddr naming both local hosts, carry a message.
func TestMultihomedAddresses(t *testing.T) {
	require.Zero(t, os.Geteuid(), "needs root: network namespaces")
	d, err := netns.NewDualPath(1500)
	require.NoError(t, err)
	t.Cleanup(d.Destroy)
	var l backend.Listener
	require.NoError(t, netns.In(d.A, func() (err error) {
		l, err = Stack(Config{}, nil).Listen(d.AAddr[0] + "/" + d.AAddr[1] + ":0")
		return err
	}))
	defer l.Close()
	laddr := l.Addr().String() // "A0/A1:port", which Dial takes
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var c backend.Transport
	require.NoError(t, netns.In(d.B, func() (err error) {
		c, err = Stack(Config{LocalAddr: d.BAddr[0] + "/" + d.BAddr[1] + ":0"}, nil).
			Dial(ctx, laddr)
		return err
	}))
	defer c.Close()
	s, err := l.Accept(ctx)
	require.NoError(t, err)
	defer s.Close()
	got := make(chan string, 1)
	s.Start(func(_ uint16, _ uint32, b []byte) { got <- string(b) }, func(error) {})
	c.Start(func(uint16, uint32, []byte) {}, func(error) {})
	require.NoError(t, c.WriteMsg(0, 0, []byte("over two links")))
	select {
	case b := <-got:
		require.Equal(t, "over two links", b)
	case <-ctx.Done():
		t.Fatal("the message did not arrive")
	}
}
