package transport

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sctp-rdma/sctp-rdma/rdmap"
)

// TestListenerAssociations_RFC5043_6: a listener lists the association it
// serves with the session control it received (one Initiate per stream,
// RFC 5043 §6.1, in the RFC 6581 enhanced form), and sums it once the
// association ended.
func TestListenerAssociations_RFC5043_6(t *testing.T) {
	ln, err := Listen(Options{LLP: SCTPPion}, "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx, new(rdmap.Device).AllocPD(), echoHandler{}) }()

	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	c, err := Dial(dctx, Options{LLP: SCTPPion, PrivateData: []byte("ok")}, ln.Addr(), 3, new(rdmap.Device).AllocPD(), nil)
	require.NoError(t, err)
	// The server counts an Accept once its write returned, which may be
	// after the client has read it: wait for the counts to settle.
	var as []AssocStats
	require.Eventually(t, func() bool {
		as = ln.Stats().Associations
		return len(as) == 1 && as[0].ControlSent.Accept+as[0].ControlSent.EnhancedAccept == 3
	}, 10*time.Second, 5*time.Millisecond)
	a := as[0]
	assert.Equal(t, SCTPPion, a.LLP)
	assert.NotEmpty(t, a.Peer)
	initiates := a.ControlReceived.Initiate + a.ControlReceived.EnhancedInitiate
	accepts := a.ControlSent.Accept + a.ControlSent.EnhancedAccept
	assert.Equal(t, uint64(3), initiates)
	assert.Equal(t, uint64(3), accepts)
	assert.True(t, a.Transport.HasRetransmissions)

	require.NoError(t, c.Close(dctx))
	require.Eventually(t, func() bool { return ln.Stats().Finished == 1 }, 10*time.Second, 5*time.Millisecond)
	tot := ln.Stats()
	assert.Zero(t, tot.Live)
	assert.Equal(t, uint64(3), tot.Totals.ControlReceived.Initiate+tot.Totals.ControlReceived.EnhancedInitiate)
	assert.Equal(t, uint64(3), tot.Totals.ControlReceived.Terminate, "each stream closed with a Session Terminate")
	assert.Empty(t, ln.Stats().Associations)
	cancel()
	require.NoError(t, <-done)
}
