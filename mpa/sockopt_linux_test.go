//go:build linux

package mpa

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sctp-rdma/sctp-rdma/iwarp"
)

// TestRFC5044_8_ErrorTakenElsewhereIsNotAFIN: the peer resets the
// connection and something other than this Conn's calls takes the error
// (here SO_ERROR; in a stack, any call on the socket). The receive side
// then reads only end of file, but the socket is in TCP_CLOSE, not
// CLOSE_WAIT: the stream ends with "TCP connection lost" (RFC 5044 §8
// code 1), not as the graceful close of a FIN (§7.2).
func TestRFC5044_8_ErrorTakenElsewhereIsNotAFIN(t *testing.T) {
	cli, srv := pair(t, &Config{}, &Config{})
	stc, ok := srv.NetConn().(*net.TCPConn)
	require.True(t, ok)
	require.NoError(t, stc.SetLinger(0))
	require.NoError(t, stc.Close()) // RST

	raw, err := cli.NetConn().(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	closed := func() bool {
		var st uint8
		require.NoError(t, raw.Control(func(fd uintptr) {
			ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
			require.NoError(t, err)
			st = ti.State
		}))
		return st == tcpClose
	}
	require.Eventually(t, closed, 5*time.Second, time.Millisecond, "the RST did not arrive")
	var soErr int
	require.NoError(t, raw.Control(func(fd uintptr) {
		soErr, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
	}))
	require.NoError(t, err)
	require.Equal(t, int(syscall.ECONNRESET), soErr, "the RST's error, taken here")

	cr := newRecorder()
	cli.Start(cr)
	end := cr.end(t)
	require.ErrorIs(t, end, ErrConnectionLost)
	assert.ErrorIs(t, end, syscall.ECONNABORTED)
	assert.Equal(t, uint8(iwarp.Term.MPAConnectionLost.Code), llpCode(t, end))
}

// TestRFC5044_7_2_FINIsGraceful: the peer's FIN at an FPDU boundary
// leaves the socket in CLOSE_WAIT, and the stream ends gracefully.
func TestRFC5044_7_2_FINIsGraceful(t *testing.T) {
	cli, srv := pair(t, &Config{}, &Config{})
	require.NoError(t, srv.NetConn().Close())
	cr := newRecorder()
	cli.Start(cr)
	assert.NoError(t, cr.end(t))
	assert.False(t, cli.socketDead())
}
