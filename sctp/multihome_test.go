package sctp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSplitHosts: the kernel backend's address syntax, several hosts
// separated by '/' and one port.
func TestSplitHosts(t *testing.T) {
	for _, tc := range []struct {
		in    string
		hosts []string
		port  uint16
		bad   bool
	}{
		{in: "10.0.1.1:7400", hosts: []string{"10.0.1.1"}, port: 7400},
		{in: "10.0.1.1/10.0.2.1:7400", hosts: []string{"10.0.1.1", "10.0.2.1"}, port: 7400},
		{in: "[2001:db8::1]/[2001:db8::2]:9", hosts: []string{"2001:db8::1", "2001:db8::2"}, port: 9},
		{in: "[2001:db8::1/2001:db8::2]:9", hosts: []string{"2001:db8::1", "2001:db8::2"}, port: 9},
		{in: "10.0.1.1/10.0.2.1", bad: true},
		{in: "10.0.1.1/10.0.2.1:99999", bad: true},
		{in: "10.0.1.1/host:1", bad: true},
	} {
		hosts, port, err := splitHosts(tc.in)
		if tc.bad {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		var want []netip.Addr
		for _, h := range tc.hosts {
			want = append(want, netip.MustParseAddr(h))
		}
		assert.Equal(t, want, hosts, tc.in)
		assert.Equal(t, tc.port, port, tc.in)
		// A multihomed listener's Addr reads back the same.
		h2, p2, err := splitHosts(hostsAddr{hosts, port}.String())
		require.NoError(t, err, tc.in)
		assert.Equal(t, want, h2, tc.in)
		assert.Equal(t, tc.port, p2, tc.in)
	}
	assert.Equal(t, "10.0.1.1/[2001:db8::2]:7400", hostsAddr{[]netip.Addr{netip.MustParseAddr("10.0.1.1"),
		netip.MustParseAddr("2001:db8::2")}, 7400}.String())
}

// TestListedAddrs_RFC9260_5_1_2: one local address is not listed (RFC
// 6951 §5.5), several are, at most wire.MaxInitAddrs.
func TestListedAddrs_RFC9260_5_1_2(t *testing.T) {
	a, b := netip.MustParseAddr("10.0.1.1"), netip.MustParseAddr("10.0.2.1")
	assert.Nil(t, listedAddrs(nil))
	assert.Nil(t, listedAddrs([]netip.Addr{a}))
	assert.Equal(t, []netip.Addr{a, b}, listedAddrs([]netip.Addr{a, b}))
	many := make([]netip.Addr, 12)
	for i := range many {
		many[i] = a
	}
	assert.Len(t, listedAddrs(many), 8)
}

// TestMultihomedHeartbeatDefault_RFC9260_8_3: a multihomed listener or
// association left without HB.interval probes its paths every 5 s, so a
// failed path rejoins within seconds; a configured interval and a
// single-homed association's 30 s (§16) stay.
func TestMultihomedHeartbeatDefault_RFC9260_8_3(t *testing.T) {
	assert.Equal(t, 5*time.Second, Config{}.multihomed().normalized().HeartbeatInterval)
	assert.Equal(t, time.Second, Config{HeartbeatInterval: time.Second}.multihomed().normalized().HeartbeatInterval)
	assert.Equal(t, -time.Second, Config{HeartbeatInterval: -time.Second}.multihomed().normalized().HeartbeatInterval)
	assert.Equal(t, 30*time.Second, Config{}.normalized().HeartbeatInterval)

	l, err := Listen("udp4", "127.0.0.1/127.0.0.2:0", nil)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, l.cfg.HeartbeatInterval)
	require.NoError(t, l.Close())
	l, err = Listen("udp4", "127.0.0.1:0", nil)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, l.cfg.HeartbeatInterval)
	require.NoError(t, l.Close())
}
