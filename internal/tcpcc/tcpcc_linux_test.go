package tcpcc

import (
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestControl: the listener, the connection it accepts and the dialled
// one all run the congestion control asked for (reno: every Linux has it
// and allows it to anyone); an unknown name fails with an error naming
// it; "" sets nothing.
func TestControl(t *testing.T) {
	assert.Nil(t, Control(""))
	lc := net.ListenConfig{Control: Control("reno")}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	d := net.Dialer{Control: Control("reno")}
	c, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	a, err := ln.Accept()
	require.NoError(t, err)
	defer a.Close()
	for _, sc := range []syscall.Conn{ln.(*net.TCPListener), c.(*net.TCPConn), a.(*net.TCPConn)} {
		cc, err := Of(sc)
		require.NoError(t, err)
		assert.Equal(t, "reno", cc)
	}
	d.Control = Control("no-such-cc")
	_, err = d.Dial("tcp", ln.Addr().String())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"no-such-cc"`)
}
