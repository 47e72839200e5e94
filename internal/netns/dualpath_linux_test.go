//go:build linux

package netns

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// udpReaches reports whether a UDP datagram sent from address from in
// ns A to address to in ns B arrives within a second.
func udpReaches(t *testing.T, d *DualPath, from, to string) bool {
	t.Helper()
	return udpFromTo(t, d.A, from, d.B, to)
}

// udpFromTo reports whether a UDP datagram sent from address from in
// namespace fromNS to address to in namespace toNS arrives within a second.
func udpFromTo(t *testing.T, fromNS, from, toNS, to string) bool {
	t.Helper()
	return udpSized(t, fromNS, from, toNS, to, 1)
}

// udpSized is udpFromTo with a datagram of n octets.
func udpSized(t *testing.T, fromNS, from, toNS, to string, n int) bool {
	t.Helper()
	var srv *net.UDPConn
	require.NoError(t, In(toNS, func() (err error) {
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(to)})
		return err
	}))
	defer srv.Close()
	var cli *net.UDPConn
	if err := In(fromNS, func() (err error) {
		cli, err = net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP(from)}, srv.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		return false // a cut link has no route: "network is unreachable"
	}
	defer cli.Close()
	_, _ = cli.Write(make([]byte, n))
	require.NoError(t, srv.SetReadDeadline(time.Now().Add(time.Second)))
	b := make([]byte, n+1)
	m, err := srv.Read(b)
	return err == nil && m == n
}

// TestDualPath: both links carry traffic; a cut or black-holed link
// carries none while the other still does; each comes back.
func TestDualPath(t *testing.T) {
	require.Zero(t, os.Geteuid(), "needs root: network namespaces")
	d, err := NewDualPath(1500)
	require.NoError(t, err)
	t.Cleanup(d.Destroy)
	for i := range 2 {
		assert.True(t, udpReaches(t, d, d.AAddr[i], d.BAddr[i]), "link %d", i)
	}
	require.NoError(t, d.Cut(0))
	assert.False(t, udpReaches(t, d, d.AAddr[0], d.BAddr[0]), "cut link")
	assert.True(t, udpReaches(t, d, d.AAddr[1], d.BAddr[1]), "the other link")
	require.NoError(t, d.Restore(0))
	require.Eventually(t, func() bool { return udpReaches(t, d, d.AAddr[0], d.BAddr[0]) }, 10*time.Second, 100*time.Millisecond)

	require.NoError(t, d.BlackHole(1))
	assert.False(t, udpReaches(t, d, d.AAddr[1], d.BAddr[1]), "black-holed link")
	assert.True(t, udpReaches(t, d, d.AAddr[0], d.BAddr[0]))
	require.NoError(t, d.Heal(1))
	assert.True(t, udpReaches(t, d, d.AAddr[1], d.BAddr[1]))
}

// TestDualPath_LoseAToB: an asymmetric failure loses what A sends on the
// link and nothing that B sends; the link comes back.
func TestDualPath_LoseAToB(t *testing.T) {
	require.Zero(t, os.Geteuid(), "needs root: network namespaces")
	d, err := NewDualPath(1500)
	require.NoError(t, err)
	t.Cleanup(d.Destroy)
	require.NoError(t, d.LoseAToB(0))
	assert.False(t, udpReaches(t, d, d.AAddr[0], d.BAddr[0]), "A to B on the link")
	assert.True(t, udpFromTo(t, d.B, d.BAddr[0], d.A, d.AAddr[0]), "B to A on the link")
	assert.True(t, udpReaches(t, d, d.AAddr[1], d.BAddr[1]), "the other link")
	require.NoError(t, d.RestoreAToB(0))
	require.Eventually(t, func() bool { return udpReaches(t, d, d.AAddr[0], d.BAddr[0]) }, 10*time.Second, 100*time.Millisecond)
}

// TestDualPath_LinkMTU: a link set to jumbo frames carries a 4000-octet
// datagram whole; the other, at 1500, only in IP fragments, which
// Fragments counts.
func TestDualPath_LinkMTU(t *testing.T) {
	require.Zero(t, os.Geteuid(), "needs root: network namespaces")
	d, err := NewDualPath(1500)
	require.NoError(t, err)
	t.Cleanup(d.Destroy)
	require.NoError(t, d.SetLinkMTU(0, 9000))
	before, err := d.Fragments()
	require.NoError(t, err)
	require.True(t, udpSized(t, d.A, d.AAddr[0], d.B, d.BAddr[0], 4000), "link 0")
	mid, err := d.Fragments()
	require.NoError(t, err)
	assert.Equal(t, before, mid, "no fragment on the jumbo link")
	require.True(t, udpSized(t, d.A, d.AAddr[1], d.B, d.BAddr[1], 4000), "link 1")
	after, err := d.Fragments()
	require.NoError(t, err)
	assert.Greater(t, after, mid, "fragments on the 1500 link")
}
