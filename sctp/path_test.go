package sctp

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An established association keeps its one destination as paths[0], the
// primary, with the peer's address and UDP port; the handshake state is
// gone.
func TestAssociation_OnePath(t *testing.T) {
	cli, srv := connected(t, nil)
	for _, a := range []*Association{cli, srv} {
		a.mu.Lock()
		require.Len(t, a.paths, 1)
		p := a.primaryPath()
		assert.Same(t, a.paths[0], p)
		assert.Nil(t, a.hs, "the handshake state goes at ESTABLISHED")
		assert.Equal(t, p.addr.String(), p.raddr.String())
		assert.Positive(t, p.cc.Cwnd())
		assert.Positive(t, p.rto.RTO())
		raddr := p.raddr
		a.mu.Unlock()
		assert.Equal(t, raddr, a.RemoteAddr())
	}
	assert.Equal(t, srv.LocalAddr().(*net.UDPAddr).Port, cli.RemoteAddr().(*net.UDPAddr).Port)
}

// The association's error counter (§8.1) and the path's (§8.2) count
// together and clear together while there is one path.
func TestAssociation_PathErrorCounter(t *testing.T) {
	cli, _ := connected(t, nil)
	cli.mu.Lock()
	defer cli.mu.Unlock()
	require.False(t, cli.countError())
	assert.Equal(t, 1, cli.errCount)
	assert.Equal(t, 1, cli.primaryPath().errCount)
	cli.clearErrors()
	assert.Zero(t, cli.errCount)
	assert.Zero(t, cli.primaryPath().errCount)
}
