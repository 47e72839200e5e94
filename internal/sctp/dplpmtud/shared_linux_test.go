//go:build linux

package dplpmtud

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestPathQuerierLoopback(t *testing.T) {
	q, err := NewPathQuerier()
	require.NoError(t, err)
	m, err := q.PathMTU(netip.MustParseAddrPort("127.0.0.1:9"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, m, 65535)
	q.Ref()
	require.NoError(t, q.Close())
	_, err = q.PathMTU(netip.MustParseAddrPort("127.0.0.2:9"))
	require.NoError(t, err, "still open: one reference left")
	require.NoError(t, q.Close())
	_, err = q.PathMTU(netip.MustParseAddrPort("127.0.0.1:9"))
	assert.ErrorIs(t, err, ErrUnsupported, "closed")
}

func pmtuDisc(t *testing.T, uc *net.UDPConn) int {
	rc, err := uc.SyscallConn()
	require.NoError(t, err)
	var v int
	require.NoError(t, rc.Control(func(fd uintptr) {
		v, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER)
	}))
	require.NoError(t, err)
	return v
}

// TestSharedDFNests: DF comes back only when every Set(false) is matched.
func TestSharedDFNests(t *testing.T) {
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer uc.Close()
	s, err := NewSharedDF(uc)
	require.NoError(t, err)
	assert.Equal(t, unix.IP_PMTUDISC_DO, pmtuDisc(t, uc))
	require.NoError(t, s.Set(false))
	require.NoError(t, s.Set(false))
	assert.Equal(t, unix.IP_PMTUDISC_DONT, pmtuDisc(t, uc))
	require.NoError(t, s.Set(true))
	assert.Equal(t, unix.IP_PMTUDISC_DONT, pmtuDisc(t, uc), "one writer still needs DF off")
	require.NoError(t, s.Set(true))
	assert.Equal(t, unix.IP_PMTUDISC_DO, pmtuDisc(t, uc))
	require.NoError(t, s.Set(true), "unbalanced on is harmless")
	assert.Equal(t, unix.IP_PMTUDISC_DO, pmtuDisc(t, uc))
}
